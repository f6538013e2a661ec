"""sender.drop(i): what was pending on i fails with ReceiverDiedError, cause 'died' (API-9)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")  # never polls: a stuck worker
connect_inproc(s, [r])
f = s.send_async({"w": torch.ones(4)})
time.sleep(0.2)
s.drop(0)
try:
    f.wait(5)
    bug("wait() returned")
except ws.ReceiverDiedError as e:
    if e.causes.get(0) == "died":
        fine("ReceiverDiedError, cause died")
    bug(f"ReceiverDiedError with causes {e.causes}")
except ws.ReceiverError as e:
    bug(f"{type(e).__name__} with causes {e.causes}: not a ReceiverDiedError")
