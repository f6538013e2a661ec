"""A receiver sends a frame of length 0 (WIRE-1: a violation): connect() fails naming it."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0))
out, t = in_thread(s.connect, 15)
init = peer.read()
peer.send_raw(b"\0\0\0\0")
try:
    peer.send(peer.ready_msg(init))
except OSError:
    pass
t.join(20)
err = out.get("error")
if err is None and not t.is_alive():
    bug("a frame of length 0 was accepted; the receiver went live")
if isinstance(err, ws.ReceiverError) and err.causes.get(0) == "violation":
    fine("the empty frame was a violation")
bug(f"unexpected outcome {out}")
