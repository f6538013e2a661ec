"""A listening socket exists at the path: Sender(listen="unix:PATH") must not take it over (RDV-8)."""
import os
import socket
import tempfile

import torch
from _confirm import bug, fine, module

ws = module()
path = os.path.join(tempfile.mkdtemp(prefix="wsround"), "trainer.sock")
other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
other.bind(path)
other.listen(1)  # another trainer, alive, at this address
try:
    s = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:{path}")
except Exception as e:  # noqa: BLE001
    fine(f"refused: {type(e).__name__}")
s.close()
bug("the sender bound over an existing socket path")
