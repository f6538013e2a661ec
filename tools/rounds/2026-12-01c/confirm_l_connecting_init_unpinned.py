"""A receiver that is connecting (its Init read, no Ready yet) while the trainer sends two versions to the
others must still find the Init's version in the Init's slot (SLOT-2). Receiver 1 is a scripted peer on the
documented wire: it reads the Init, keeps its handles, and answers nothing until the sends are done."""
import mmap
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _confirm import bug, connect_inproc, fine, module  # noqa: E402
from _wirepeer import Peer  # noqa: E402

ws = module()
w = {"w": torch.zeros(16)}
sender = ws.Sender(w, 2)
h0, h1 = sender.handle(0), sender.handle(1)
r0 = ws.Receiver(h0)
peer = Peer(h1, timeout=10)
connect_inproc(sender, [r0], workers=[0])
try:
    sender.connect(timeout=0.5, workers=[1])
except ws.SyncTimeoutError:
    pass
init = peer.read()
assert init["type"] == "Init", init
for v in (1.0, 2.0):
    w["w"].fill_(v)
    sender.send(workers=[0], timeout=10)
entry = init["manifest"][0]
idx = [s["slot"] for s in init["slots"]].index(init["slot"])
info = init["slots"][idx]
fd = peer.fds[idx]
m = mmap.mmap(fd, info["nbytes"], prot=mmap.PROT_READ)
vals = torch.frombuffer(bytearray(m[entry["offset"]:entry["offset"] + entry["nbytes"]]), dtype=torch.float32)
print("Init version", init["version"], "slot", init["slot"], "holds", vals.tolist()[:4])
if not torch.equal(vals, torch.zeros(16)):
    bug(f"the slot named by the unanswered Init (version {init['version']}) was written again while receiver 1 "
        f"was connecting: it now holds {vals[0].item()} (SLOT-2)")
peer.send(peer.ready_msg(init))
fine("the Init's slot kept version 0 until the Ready")
