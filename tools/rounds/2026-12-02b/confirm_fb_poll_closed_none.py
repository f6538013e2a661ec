"""A pull receiver connects and is closed; poll() on it must raise ClosedError (LIFE-6)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=20)
r.close()
try:
    got = r.poll(timeout=0.5)
except ws.ClosedError as e:
    s.close()
    fine(f"poll() on a closed receiver raised ClosedError: {e}")
s.close()
bug(f"poll() on a closed receiver returned {got!r} instead of raising ClosedError (LIFE-6)")
