"""A scripted receiver sends Heartbeat after Init and before Ready: legal (MSG-4), connect() succeeds."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0))
out, t = in_thread(s.connect, 15)
init = peer.read()
assert init["type"] == "Init", init
peer.send({"type": "Heartbeat"})
peer.send(peer.ready_msg(init))
t.join(20)
if "error" in out:
    bug(f"connect() raised for a Heartbeat before Ready: {type(out['error']).__name__}: {out['error']}")
if t.is_alive():
    bug("connect() did not return")
fine("a Heartbeat from a connecting receiver was ignored")
