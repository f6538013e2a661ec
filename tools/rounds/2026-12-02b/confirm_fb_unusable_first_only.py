"""Three push receivers; receivers 0 and 1 close (their channels end), then a send to all three must raise
ReceiverDiedError naming both 0 and 1, with .version None (SEND-4, SEND-7)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 3)
rs = [ws.Receiver(s.handle(i)) for i in range(3)]
connect_inproc(s, rs, timeout=20)
rs[0].close()
rs[1].close()
time.sleep(0.5)
err = None
try:
    s.send(timeout=10)
except ws.WeightSyncError as e:
    err = e
version = s.version
for x in (s, *rs):
    x.close()
if err is None or not isinstance(err, ws.ReceiverDiedError):
    raise SystemExit(f"the send raised {err!r}: no verdict")
if err.workers != [0, 1] or err.version is not None or version != 0:
    bug(f"ReceiverDiedError names {err.workers} (version {err.version}, sender at {version}); receivers 0 and 1 "
        "were both gone (SEND-4, SEND-7)")
fine(f"ReceiverDiedError names {err.workers}, causes {err.causes}")
