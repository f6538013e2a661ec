"""Two workers; the second one's process hangs before its handshake, so sender.connect() times out for it. A
send() without workers targets every receiver and must raise LocalProtocolError for the one not connected
(SEND-4), publishing nothing (VER-2), rather than return as if every worker held the version."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _confirm import bug, connect_inproc, fine, module  # noqa: E402
from _wirepeer import Peer  # noqa: E402

ws = module()
sender = ws.Sender({"w": torch.zeros(4)}, 2)
h0, h1 = sender.handle(0), sender.handle(1)
r0 = ws.Receiver(h0)
peer = Peer(h1)  # the worker's process holds its end and hangs before its handshake
try:
    connect_inproc(sender, [r0], timeout=1)
except ws.SyncTimeoutError as e:
    print("connect timed out for", e.workers)
try:
    v = sender.send(timeout=5)
except ws.LocalProtocolError as e:
    if sender.version != 0:
        bug(f"the refused send spent a version: {sender.version}")
    fine(f"send() raised LocalProtocolError: {e}")
except ws.WeightSyncError as e:
    bug(f"send() raised {type(e).__name__}: {e}")
else:
    bug(f"send() without workers returned version {v} though receiver 1 never connected (SEND-4)")
