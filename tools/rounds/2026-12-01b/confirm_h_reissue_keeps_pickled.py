"""Once handle(0) was pickled, sender.handle(0) (still unconnected) must be a new handle over a new channel, and
the old channel must end for the process that holds it (CON-3)."""
import pickle
import socket
from multiprocessing.reduction import ForkingPickler

import _confirm
import torch

ws = _confirm.module()
sender = ws.Sender({"w": torch.zeros(4)}, 1)
h = sender.handle(0)
data = ForkingPickler.dumps(h)  # as a spawn Process's argument is pickled
old = pickle.loads(data)        # what the first worker process would hold: its own copy of the channel end
h2 = sender.handle(0)
problems = []
if h2 is h:
    problems.append("handle(0) returned the handle already pickled")
try:
    ForkingPickler.dumps(h2)
except ws.LocalProtocolError as e:
    problems.append(f"pickling the new handle(0) raised LocalProtocolError: {str(e)[:90]}")
sock = socket.socket(fileno=old.conn.detach())
sock.settimeout(3.0)
try:
    got = sock.recv(16)
    if got != b"":
        problems.append(f"the old channel gave bytes {got!r}")
except TimeoutError:
    problems.append("the old channel did not end within 3 s: its process would wait on it for good")
except OSError:
    pass  # reset: an end of channel too
if problems:
    _confirm.bug("; ".join(problems))
_confirm.fine("a new handle, picklable, and the old channel ended")
