"""Receiver 0 is a scripted peer (wire profile): Ready(ok) to Init, then Ack(1) twice for Receive(1). The second Ack
is of a version no longer pending (ACK-5): the sender must cut receiver 0 off, so the next send fails with
ReceiverError (cause violation) instead of going out to it."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0), timeout=8)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise SystemExit(f"handshake failed: {out['error']!r}")
seen = []


def scripted():
    while True:
        try:
            rec = peer.read()
        except (EOFError, OSError) as e:
            seen.append(type(e).__name__)
            return
        seen.append(rec.get("version"))
        ack = {"type": "Ack", "receiver": 0, "version": rec["version"], "status": "ok", "detail": ""}
        peer.send(ack)
        if rec["version"] == 1:
            peer.send(ack)  # the duplicate


_, pt = in_thread(scripted)
v1 = s.send({"w": torch.ones(4)}, timeout=8)
err = None
try:
    v2 = s.send({"w": torch.full((4,), 2.0)}, timeout=5)
except Exception as e:  # noqa: BLE001
    err = e
s.close()
pt.join(5)
peer.close()
if isinstance(err, ws.ReceiverError) and err.causes.get(0) == "violation":
    fine(f"version {v1} acked twice: the next send raised ReceiverError {err.causes}")
if err is None:
    bug(f"receiver 0 acked version {v1} twice and stayed live: the next send returned {v2} (peer saw {seen})")
raise SystemExit(f"unexpected: {err!r}")
