"""A receiver of protocol 1.2 (same major) answers Ready(ok): it is live (SM-S-2, WIRE-6)."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0))
out, t = in_thread(s.connect, 15)
init = peer.read()
peer.send(peer.ready_msg(init, protocol="1.2"))
t.join(20)
if "error" in out:
    bug(f"connect() raised for a Ready of protocol 1.2: {type(out['error']).__name__}: {out['error']}")
if t.is_alive():
    bug("connect() did not return")
fine("a 1.2 receiver is live")
