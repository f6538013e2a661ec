"""connect(workers=[0, 1]) with receiver 0 already live must leave 0 as it is and connect 1 (API-2)."""
import _confirm
import torch

ws = _confirm.module()
sender = ws.Sender({"w": torch.arange(4, dtype=torch.float32)}, 2)
r0 = ws.Receiver(sender.handle(0))
r1 = ws.Receiver(sender.handle(1))
_confirm.connect_inproc(sender, [r0], workers=[0], timeout=10)
out, t = _confirm.in_thread(r1.connect, 10)
try:
    sender.connect(timeout=10, workers=[0, 1])
except ws.WeightSyncError as e:
    _confirm.bug(f"connect(workers=[0, 1]) with 0 live raised {type(e).__name__}: {str(e)[:100]}")
t.join(10)
if "result" not in out:
    _confirm.bug(f"receiver 1 did not connect: {out}")
v = sender.send(timeout=10)
_confirm.fine(f"0 left as it was, 1 connected; a send to both returned {v}")
