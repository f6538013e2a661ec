"""A scripted receiver on handle(0)'s descriptor answers Init with Ready(ok) in protocol "1.2" (a later minor
version of the same major): connect() must succeed (SM-S-2, WIRE-6), and a send it acks must return."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
peer = Peer(s.handle(0), timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init, protocol="1.2"))
t.join(12)
if "error" in out:
    err = out["error"]
    peer.close()
    s.close()
    bug(f"connect() refused a Ready(ok) of protocol 1.2: {type(err).__name__}: {str(err)[:160]} (SM-S-2: only "
        "another major version is a violation)")
f = s.send_async({"w": torch.ones(8)}, timeout=5)
rec = peer.read()
peer.send({"type": "Ack", "receiver": 0, "version": rec["version"], "status": "ok", "detail": ""})
err = None
try:
    f.wait(8)
except ws.WeightSyncError as e:
    err = e
peer.close()
s.close()
if err is not None:
    bug(f"a 1.2 receiver's Ack failed the send: {type(err).__name__}: {str(err)[:140]}")
fine("a receiver of protocol 1.2 connected and acked")
