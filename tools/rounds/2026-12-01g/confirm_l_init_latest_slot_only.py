"""Receiver 0 (in this process) connects and takes two versions, so its group holds at least three slots; then a
scripted receiver 1 reads its Init on the handle's descriptor: the Init must list every slot that exists, at least
the two of SLOT-1 and every slot a later Receive names without introducing it, with one handle each (INIT-1,
WIRE-4). The scripted peer then takes one more version: its Receive may name only slots it was given."""
import torch
from _confirm import bug, connect_inproc, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
r0 = ws.Receiver(s.handle(0))
connect_inproc(s, [r0], workers=[0], timeout=15)
for v in (1, 2):
    s.send({"w": torch.full((8,), float(v))}, workers=[0], timeout=10)
peer = Peer(s.handle(1), timeout=15)
out, t = in_thread(s.connect, 15, workers=[1])
init = peer.read()
slots = sorted(si["slot"] for si in init["slots"])
fds = len(peer.fds)
peer.send(peer.ready_msg(init))
t.join(15)
out2, t2 = in_thread(s.send, {"w": torch.full((8,), 3.0)}, timeout=10)
rec = peer.read()
peer.send({"type": "Ack", "receiver": 1, "version": rec["version"], "status": "ok", "detail": ""})
t2.join(15)
late = sorted(si["slot"] for si in rec["new_slots"])
peer.close()
r0.close()
s.close()
if len(slots) < 2 or late:
    bug(f"the Init listed slots {slots} ({fds} handles); the next Receive introduced {late}: Init carries every "
        "slot that exists (INIT-1)")
if "error" in out or "error" in out2:
    bug(f"connect/send raised {out.get('error')!r} {out2.get('error')!r}")
fine(f"the Init listed slots {slots} with {fds} handles; the next Receive named slot {rec['slot']}")
