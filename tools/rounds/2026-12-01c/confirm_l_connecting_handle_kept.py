"""A worker whose connect() timed out (its process never called Receiver.connect()) is restarted as spec 8.4
says: handle(i) for a new handle, a new worker, connect(workers=[i]). The new handle must be usable (SM-S-5)."""
import os
import pickle
import sys
from multiprocessing.reduction import ForkingPickler

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _confirm import bug, connect_inproc, fine, module  # noqa: E402

ws = module()
sender = ws.Sender({"w": torch.zeros(4)}, 1)
h = sender.handle(0)
ForkingPickler.dumps(h)  # it went to a worker process, which never started
try:
    sender.connect(timeout=0.5)
except ws.SyncTimeoutError:
    pass
h2 = sender.handle(0)
try:
    data = bytes(ForkingPickler.dumps(h2))  # to the new worker process
except ws.LocalProtocolError as e:
    bug(f"handle(0) after a timed-out connect gave back the consumed handle (same object: {h2 is h}): {e}")
r = pickle.loads(data)
try:
    rec = ws.Receiver(r)
    connect_inproc(sender, [rec], workers=[0], timeout=10)
except Exception as e:  # noqa: BLE001
    bug(f"the new handle could not restart receiver 0: {type(e).__name__}: {e}")
if rec.version != 0:
    bug(f"restarted receiver holds {rec.version}")
fine("a new handle restarted the receiver")
