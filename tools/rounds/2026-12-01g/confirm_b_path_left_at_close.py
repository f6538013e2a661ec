"""A sender listening on unix:PATH is closed; RDV-8: the socket file is removed at close(), so a new sender (the
trainer restarted) can listen on the same path."""
import os
import tempfile

import torch
from _confirm import bug, fine, module

ws = module()
d = tempfile.mkdtemp(prefix="wsb-")
path = os.path.join(d, "trainer.sock")
s = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:{path}")
if not os.path.exists(path):
    s.close()
    raise SystemExit("the listening sender made no socket file")
s.close()
left = os.path.lexists(path)
try:
    s2 = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:{path}")
    s2.close()
    again = None
except Exception as e:  # noqa: BLE001
    again = e
if os.path.lexists(path):
    os.unlink(path)
os.rmdir(d)
if left or again is not None:
    bug(f"after sender.close() the socket file is still at {path} (exists: {left}); a new Sender on that path "
        f"raised {again!r}"[:400])
fine("close() removed the socket file; a new sender listens on the same path")
