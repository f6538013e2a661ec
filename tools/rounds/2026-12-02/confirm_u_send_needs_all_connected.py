"""Two receivers; only receiver 0 is connected (connect(workers=[0])), receiver 1's handle is out but it has not
connected yet. send(workers=[0]) targets a connected receiver only: it must publish and return (SEND-4)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
h1 = s.handle(1)  # the second worker is still starting
r0 = ws.Receiver(s.handle(0))
connect_inproc(s, [r0], workers=[0], timeout=20)
err, got = None, None
try:
    got = s.send({"w": torch.ones(8)}, workers=[0], timeout=10)
except ws.WeightSyncError as e:
    err = e
r0.close()
s.close()
if isinstance(err, ws.LocalProtocolError):
    bug(f"send(workers=[0]) raised LocalProtocolError ({str(err)[:100]}) because receiver 1, not a target, is not "
        "connected yet (SEND-4 judges the targets)")
if err is not None:
    raise SystemExit(f"the send raised {type(err).__name__}: {err}; no verdict")
fine(f"send(workers=[0]) returned version {got}")
