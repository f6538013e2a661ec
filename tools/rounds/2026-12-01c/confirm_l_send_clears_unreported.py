"""Receiver 1 (a scripted peer on the documented wire) answers its Init with Ready(error) only after the
trainer's connect() timed out. A send to all names it (SEND-4); the next connect() without workers must name
it too (INIT-5: once, however long ago it failed)."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _confirm import bug, connect_inproc, fine, module  # noqa: E402
from _wirepeer import Peer  # noqa: E402

ws = module()
sender = ws.Sender({"w": torch.zeros(4)}, 2)
h0, h1 = sender.handle(0), sender.handle(1)
r0 = ws.Receiver(h0)
peer = Peer(h1, timeout=10)
try:
    connect_inproc(sender, [r0], timeout=1)
except ws.SyncTimeoutError as e:
    print("connect timed out for", e.workers)
init = peer.read()
peer.send(peer.ready_msg(init, status="error", version=None, detail="target mismatch: no 'w'"))
time.sleep(0.3)
try:
    sender.send(timeout=10)
    bug("a send to a failed receiver returned")
except ws.ReceiverError as e:
    print("send raised, naming", e.workers, e.causes)
try:
    sender.connect(timeout=5)
except ws.ReceiverError as e:
    if e.workers == [1]:
        fine(f"connect() named receiver 1: {e.causes}")
    bug(f"connect() named {e.workers}")
except ws.WeightSyncError as e:
    bug(f"connect() raised {type(e).__name__}: {e}")
bug("connect() without workers returned, not naming receiver 1 whose handshake failed while no connect() waited")
