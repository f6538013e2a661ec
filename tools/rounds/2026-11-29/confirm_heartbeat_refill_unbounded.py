"""One Heartbeat, 2.5 s later 200 at once: more than the bucket of 64 (SEC-8); the sender cuts it off."""
import time

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer, frame

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0))
out, t = in_thread(s.connect, 15)
init = peer.read()
peer.send({"type": "Heartbeat"})
time.sleep(2.5)
peer.send_raw(frame({"type": "Heartbeat"}) * 200)
time.sleep(0.5)
try:
    peer.send(peer.ready_msg(init))
except OSError:
    pass
t.join(20)
err = out.get("error")
if err is None and not t.is_alive():
    bug("200 Heartbeats at once were accepted and the receiver went live")
if isinstance(err, ws.ReceiverError) and err.causes.get(0) == "violation":
    fine("the flood was a violation")
bug(f"unexpected outcome: {out}")
