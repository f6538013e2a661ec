"""Receiver 0 is a push worker that acks at once; receiver 1 a pull worker that does not poll. send(timeout=1)
to both must raise SyncTimeoutError naming receiver 1 only (8.4: "The targets that have not answered"); receiver
0 acked the version."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
rs = [ws.Receiver(s.handle(0)), ws.Receiver(s.handle(1), mode="pull")]
connect_inproc(s, rs, timeout=20)
err = None
try:
    s.send({"w": torch.ones(8)}, timeout=1)
except ws.SyncTimeoutError as e:
    err = e
for x in (s, *rs):
    x.close()
if err is None:
    raise SystemExit("the send did not time out: no verdict")
if err.workers != [1] or 0 in err.causes:
    bug(f"SyncTimeoutError names {err.workers} (causes {err.causes}); receiver 0 had acked: only receiver 1 "
        "had not answered (SEND-2, SEND-7)")
fine(f"SyncTimeoutError names {err.workers} with causes {err.causes}")
