"""Names exactly (INIT-3, ACK-7). (1) A pull receiver whose target matches connects; the worker then adds a name
to its target mapping; the next send must fail with ReceiverError naming it (Ack(error)), and poll() raise
ReceiverError. (2) A receiver whose target holds one name more than the manifest must be refused at connect with
WeightsMismatchError, and the sender's connect raise ReceiverError naming it."""
import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
w = {"w": torch.ones(4), "b": torch.zeros(2)}
s = ws.Sender(w, 2)
tgt = {"w": torch.zeros(4), "b": torch.zeros(2)}
r0 = ws.Receiver(s.handle(0), tgt, mode="pull")
connect_inproc(s, [r0], workers=[0], timeout=15)
tgt["extra"] = torch.zeros(3)  # the worker's mapping now holds a name the manifest does not
f = s.send_async({"w": torch.full((4,), 2.0), "b": torch.ones(2)}, workers=[0], timeout=10)
polled = None
try:
    polled = r0.poll(10)
except ws.ReceiverError:
    pass
try:
    f.wait(10)
except ws.ReceiverError as e:
    if e.workers != [0]:
        bug(f"the send raised ReceiverError naming {e.workers}, expected [0]")
else:
    bug(f"a target with an extra name ({sorted(tgt)}) took version {polled} and acked ok (ACK-7: names exactly)")

r1 = ws.Receiver(s.handle(1), {"w": torch.zeros(4), "b": torch.zeros(2), "extra": torch.zeros(3)})
out, t = in_thread(r1.connect, 15)
try:
    s.connect(timeout=15, workers=[1])
except ws.ReceiverError as e:
    sender_err = e
else:
    sender_err = None
t.join(15)
r0.close()
r1.close()
s.close()
if sender_err is None or "error" not in out:
    bug(f"a target with an extra name connected: receiver {out}, sender raised {sender_err!r} (INIT-3)")
if not isinstance(out["error"], ws.WeightsMismatchError):
    bug(f"receiver.connect raised {out['error']!r}, not WeightsMismatchError (INIT-3)")
fine("a target with a name the manifest lacks is refused at connect and before an apply")
