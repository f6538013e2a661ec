"""A receiver attaches a descriptor to its Ready: the sender takes none (WIRE-4), connect() succeeds."""
import os

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer, frame

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0))
out, t = in_thread(s.connect, 15)
init = peer.read()
fd = os.open("/dev/null", os.O_RDONLY)
peer.send_raw(frame(peer.ready_msg(init)), fds=[fd])
t.join(20)
if "error" in out:
    bug(f"connect() raised: {type(out['error']).__name__}: {out['error']}")
if t.is_alive():
    bug("connect() did not return")
fine("the descriptor was discarded and the receiver is live")
