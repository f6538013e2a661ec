"""Receiver 1 is a scripted peer on the documented wire: it answers its Init correctly, then acks version 1
naming receiver 0. The sender must take that as a violation (MSG-2, SM-S-9): send() raises ReceiverError
naming receiver 1 with cause "violation", and does not return the version."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _confirm import bug, connect_inproc, fine, in_thread, module  # noqa: E402
from _wirepeer import Peer  # noqa: E402

ws = module()
sender = ws.Sender({"w": torch.zeros(4)}, 2)
h0, h1 = sender.handle(0), sender.handle(1)
r0 = ws.Receiver(h0)
peer = Peer(h1, timeout=10)


def script():
    init = peer.read()
    peer.send(peer.ready_msg(init))
    rec = peer.read()
    assert rec["type"] == "Receive", rec
    peer.send({"type": "Ack", "receiver": 0, "version": rec["version"], "status": "ok", "detail": ""})
    return rec["version"]


out, t = in_thread(script)
connect_inproc(sender, [r0], timeout=10)
try:
    v = sender.send(timeout=10)
except ws.ReceiverError as e:
    if e.workers == [1] and e.causes.get(1) == "violation":
        fine(f"send raised naming receiver 1 as a violation: {e.details[1][:100]}")
    bug(f"send raised naming {e.workers} {e.causes}")
except ws.WeightSyncError as e:
    bug(f"send raised {type(e).__name__}: {e}")
else:
    bug(f"send() returned {v}: receiver 1's channel carried an Ack naming receiver 0, taken as receiver 1's (MSG-2)")
