"""A scripted receiver on handle(0)'s descriptor answers Init with a Ready that carries one more key than Table
12-1 lists ("trace", as a later minor version might add), then acks version 1 with such an Ack. WIRE-3: a key the
table does not list is ignored; the handshake and the send must succeed."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
peer = Peer(s.handle(0), timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init, trace="abc"))
t.join(12)
if "error" in out:
    err = out["error"]
    peer.close()
    s.close()
    bug(f"connect() refused a Ready with one extra key: {type(err).__name__}: {str(err)[:140]} (WIRE-3: ignored)")
f = s.send_async({"w": torch.ones(8)}, timeout=5)
rec = peer.read()
peer.send({"type": "Ack", "receiver": 0, "version": rec["version"], "status": "ok", "detail": "", "trace": "abc"})
err = None
try:
    f.wait(8)
except ws.WeightSyncError as e:
    err = e
peer.close()
s.close()
if err is not None:
    bug(f"an Ack with one extra key failed the send: {type(err).__name__}: {str(err)[:140]} (WIRE-3: ignored)")
fine("a Ready and an Ack carrying an unknown key were accepted")
