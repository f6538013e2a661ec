"""A pull worker whose target tensor was replaced by one of another shape fails version 1 (Ack(error), ACK-7); the
trainer's send raises ReceiverError. Version 1 was published: sender.version is 1 (VER-1). The worker puts its target
right and the next send repairs it (ACK-6) with version 2, strictly newer than 1 (VER-3)."""
import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
target = {"w": torch.zeros(4)}
r = ws.Receiver(s.handle(0), target, mode="pull")
connect_inproc(s, [r], timeout=15)
target["w"] = torch.zeros(5)  # the worker changed its target: the next apply fails (ACK-7)
out, t = in_thread(r.poll, 10)
first = None
try:
    s.send({"w": torch.ones(4)}, timeout=10)
except ws.ReceiverError as e:
    first = e
t.join(10)
after_fail = s.version
target["w"] = torch.zeros(4)  # repaired
out2, t2 = in_thread(r.poll, 10)
second = None
try:
    second = s.send({"w": torch.full((4,), 2.0)}, timeout=10)
except ws.WeightSyncError as e:
    second = e
t2.join(10)
rv, stopped = r.version, r.stopped
r.close()
s.close()
if first is None:
    raise SystemExit("the send to a mismatched target did not fail")
if after_fail != 1 or second != 2:
    bug(f"after the failed send of version {first.version} sender.version is {after_fail}; the repair send gave "
        f"{second!r}; the worker's poll: {out2.get('error', out2.get('result'))!r}, stopped={stopped}")
fine(f"failed send of version {first.version}, sender.version {after_fail}; repair send returned {second}, "
     f"worker at {rv}")
