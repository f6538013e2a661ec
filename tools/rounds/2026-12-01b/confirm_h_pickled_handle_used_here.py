"""Receiver(handle) in the process that pickled the handle away must raise LocalProtocolError (CON-3)."""
from multiprocessing.reduction import ForkingPickler

import _confirm
import torch

ws = _confirm.module()
sender = ws.Sender({"w": torch.zeros(4)}, 1)
h = sender.handle(0)
ForkingPickler.dumps(h)  # as a spawn Process's argument is pickled: the handle went to another process
try:
    r = ws.Receiver(h)
except ws.LocalProtocolError as e:
    _confirm.fine(f"refused: {str(e)[:90]}")
_confirm.bug("Receiver(handle) was made in the process that had pickled the handle away")
