"""A scripted receiver takes two pipelined versions (Receive 1, Receive 2) and acks 1 only, as a push receiver does
when version 2 arrives while it applies 1. ACK-2: Ack(1) answers version 1, not 2: the future of 2 is not done and
its wait times out naming the receiver; the future of 1 completes."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
peer = Peer(s.handle(0), timeout=15)
out, t = in_thread(s.connect, 15)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(15)
if "error" in out:
    raise SystemExit(f"connect failed: {out['error']!r}")
f1 = s.send_async({"w": torch.full((8,), 1.0)}, timeout=5)
f2 = s.send_async({"w": torch.full((8,), 2.0)}, timeout=5)
got = [peer.read()["version"], peer.read()["version"]]
peer.send({"type": "Ack", "receiver": 0, "version": 1, "status": "ok", "detail": ""})
v1 = f1.wait(5)
res = None
try:
    res = f2.wait(0.5)
except ws.SyncTimeoutError as e:
    res = e
peer.close()
s.close()
if not isinstance(res, ws.SyncTimeoutError):
    bug(f"the receiver acked only version 1 (it was sent {got}), yet the future of version 2 returned {res!r}")
fine(f"Ack(1) completed version {v1}; version 2 still waits: {type(res).__name__} naming {res.workers}")
