"""ACK-2 + ACK-6: a pull receiver with versions 1 and 2 pending applies only 2, which fails (its target no
longer matches), and answers Ack(2, error). That ack answers version 1 too: future 1 must fail with
ReceiverError naming receiver 0, not time out."""
import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
tg = {"w": torch.zeros(4)}
r = ws.Receiver(s.handle(0), tg, mode="pull")
_confirm.connect_inproc(s, [r], timeout=20)
f1 = s.send_async()
f2 = s.send_async()
tg["w"] = torch.zeros(5)  # the next apply fails (ACK-7)
try:
    got = r.poll(5)
    _confirm.bug(f"setup: poll() applied {got} into a mismatched target")
except ws.ReceiverError:
    pass
try:
    f2.wait(5)
    _confirm.bug("setup: version 2 completed")
except ws.ReceiverError:
    pass
try:
    v = f1.wait(3)
    _confirm.bug(f"future 1 completed ({v}) though its receiver's ack of 2 failed")
except ws.SyncTimeoutError as e:
    _confirm.bug(f"version 1 timed out instead of failing with the Ack(2, error) that answers it: {e.causes}")
except ws.ReceiverError as e:
    if e.workers != [0] or e.causes.get(0) != "error" or e.version != 1:
        _confirm.bug(f"version 1's error is wrong: workers={e.workers} causes={e.causes} version={e.version}")
    _confirm.fine(f"version 1 failed with the ack of 2: workers={e.workers} causes={e.causes}")
