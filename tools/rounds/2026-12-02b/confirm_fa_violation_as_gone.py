"""Receiver 0 is a scripted peer on its handle's descriptor (wire profile): it answers Init with Ready(ok), then
answers Receive(1) with an Ack of version 7, which is not pending (ACK-5: a protocol violation). The send must fail
with ReceiverError naming receiver 0 with cause "violation" (SM-S-9), and so must the next send, not with
ReceiverDiedError / "died"."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
h = s.handle(0)
peer = Peer(h, timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise SystemExit(f"handshake failed: {out['error']!r}")


def answer_wrong():
    rec = peer.read()
    peer.send({"type": "Ack", "receiver": 0, "version": rec["version"] + 6, "status": "ok", "detail": ""})


_, pt = in_thread(answer_wrong)
errs = []
for _ in range(2):
    try:
        s.send({"w": torch.ones(4)}, timeout=8)
        errs.append(None)
    except Exception as e:  # noqa: BLE001
        errs.append(e)
pt.join(5)
peer.close()
s.close()
desc = [f"{type(e).__name__} causes={getattr(e, 'causes', None)}" for e in errs]
if all(isinstance(e, ws.ReceiverError) and not isinstance(e, ws.ReceiverDiedError)
       and e.causes.get(0) == "violation" for e in errs):
    fine(f"both sends: {desc}")
if any(isinstance(e, ws.ReceiverDiedError) or (getattr(e, "causes", {}) or {}).get(0) == "died" for e in errs):
    bug(f"a receiver that broke the protocol is reported as died: {desc}")
raise SystemExit(f"unexpected: {desc}")
