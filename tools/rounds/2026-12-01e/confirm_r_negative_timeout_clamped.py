"""One live receiver, a free slot. send_async(timeout=-0.5) and send(timeout=-0.5) must raise ValueError and
publish nothing: sender.version stays 0 and the receiver stays at version 0 (API-7)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=10)
budget_end = time.monotonic() - 0.5  # a budget already spent
try:
    f = s.send_async({"w": torch.ones(4)}, timeout=budget_end - time.monotonic())
    bug(f"send_async with a negative timeout published version {f.version}")
except ValueError:
    pass
try:
    v = s.send({"w": torch.ones(4)}, timeout=-0.5)
    bug(f"send with a negative timeout published and returned version {v}")
except ValueError:
    pass
except ws.WeightSyncError as e:
    bug(f"send with a negative timeout raised {type(e).__name__} (version {getattr(e, 'version', None)}), "
        f"sender.version now {s.version}")
if s.version != 0:
    bug(f"sender.version moved to {s.version}")
s.close()
r.close()
fine("a negative timeout raises ValueError and publishes nothing")
