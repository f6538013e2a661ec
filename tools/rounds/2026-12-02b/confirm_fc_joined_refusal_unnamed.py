"""A listening sender (unix:@NAME) with two receivers. Worker 0 joins by URL and the trainer connects it
(`connect(workers=[0])`) and trains, sending to it. Meanwhile worker 1 joins with a target of the wrong shape: it is
sent Init at once (RDV-5) and refuses it (Ready(error); WeightsMismatchError in the worker) while no connect() runs;
the trainer's next send to worker 0 reads that answer. The trainer's `sender.connect()` without workers, meant to
pick up late workers, must then raise ReceiverError naming receiver 1 (INIT-5), not return."""
import os
import time
import uuid

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2, listen=f"unix:@ws-fc-unnamed-{os.getpid()}-{uuid.uuid4().hex[:8]}")
good = ws.Receiver(s.url(0), {"w": torch.zeros(8)})
out, t = in_thread(good.connect, 10)
s.connect(timeout=10, workers=[0])
t.join(10)
bad = ws.Receiver(s.url(1), {"w": torch.zeros(9)})
try:
    bad.connect(timeout=10)
    raise SystemExit("the mismatched worker connected: no verdict")
except ws.WeightsMismatchError:
    pass
time.sleep(0.3)
s.send({"w": torch.ones(8)}, workers=[0], timeout=10)  # training goes on with worker 0
err = None
try:
    s.connect(timeout=5)
except ws.WeightSyncError as e:
    err = e
good.close()
bad.close()
s.close()
if err is None:
    bug("sender.connect() returned although receiver 1 had refused its Init while no connect() ran (INIT-5)")
if not isinstance(err, ws.ReceiverError) or err.workers != [1]:
    raise SystemExit(f"connect() raised {type(err).__name__}: {err}: no verdict")
fine(f"connect() raised {type(err).__name__} naming {err.workers}")
