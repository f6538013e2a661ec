"""A scripted receiver, live, answers Receive(1) with an Ack of version 9 (not pending: ACK-5). The send fails with
ReceiverError (cause violation) naming it, and SM-S-9: the sender closes its channel, so the receiver's end reads
end of file, while the sender is still open."""

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0), timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise out["error"]
f = s.send_async(timeout=5)
rcv = peer.read()
peer.send({"type": "Ack", "receiver": 0, "version": rcv["version"] + 8, "status": "ok", "detail": ""})
try:
    f.wait(timeout=8)
    err = None
except ws.WeightSyncError as e:
    err = e
if not (isinstance(err, ws.ReceiverError) and getattr(err, "causes", {}).get(0) == "violation"):
    s.close()
    raise SystemExit(f"expected ReceiverError (violation), got {err!r}")
peer.sock.settimeout(4)
try:
    more = peer.read()
    seen = f"a further message {more.get('type')}"
except EOFError:
    seen = "eof"
except TimeoutError:
    seen = "nothing in 4 s: the channel is still open"
except OSError as e:
    seen = f"eof ({e})"
s.close()
peer.close()
if seen.startswith("eof"):
    fine("the violator's channel was closed: its end read end of file while the sender was open")
bug(f"after cutting receiver 0 off for a violation (ReceiverError raised), the sender kept its channel: {seen}")
