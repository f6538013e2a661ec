"""Reference bug check (INIT-5): a receiver that joined by URL, answered Ready(error) and went away before
any sender.connect() ran must be named by the next sender.connect() without workers (once), as a
ReceiverError. The reference's connect() targets only unconnected/connecting receivers, so once its
helper thread has read the failure, connect() returns as if nothing happened. Exits 1 (BUG SEEN) when
connect() returns normally."""
import time

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(3)}, 1, listen=f"unix:@wsround-init5-{time.time_ns()}")
r = ws.Receiver(s.url(0), {"w": torch.zeros(4)})  # a target that does not match: Ready(error)
try:
    r.connect(timeout=10)
except ws.WeightsMismatchError:
    pass
r.close()  # the worker exits
time.sleep(2)  # the sender's helper thread reads the Ready(error) and the hang-up meanwhile
try:
    s.connect(timeout=3)
except ws.ReceiverError as e:
    fine(f"connect() named {e.workers}: {e.causes}")
except ws.WeightSyncError as e:
    bug(f"connect() raised {type(e).__name__} without naming the failed receiver: {e}")
bug(f"connect() returned; receiver 0 failed its handshake before it and is not named ({s!r})")
