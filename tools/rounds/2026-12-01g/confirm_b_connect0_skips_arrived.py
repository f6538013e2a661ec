"""The trainer's connect(timeout=0.3) times out (the worker had not called connect yet); the worker then connects
(its Init was waiting), so its Ready is at the sender. API-7: connect(timeout=0) whose Ready has arrived goes on,
returns, and the receiver is live (a send to it returns its version)."""
import time

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
try:
    s.connect(timeout=0.3)
    raise SystemExit("the first connect did not time out")
except ws.SyncTimeoutError:
    pass
r.connect(timeout=5)  # the Init is there: Ready goes out now
time.sleep(0.3)
err = None
try:
    s.connect(timeout=0)
except ws.WeightSyncError as e:
    err = e
v = None
if err is None:
    f = s.send_async(timeout=5)
    r.poll(5)
    v = f.wait(5)
r.close()
s.close()
if err is not None:
    bug(f"connect(timeout=0) raised {type(err).__name__} naming {getattr(err, 'workers', None)} although the "
        f"worker's Ready had arrived (it returned version 0 from its connect)")
fine(f"connect(timeout=0) took the arrived Ready; a send then reached the worker (version {v})")
