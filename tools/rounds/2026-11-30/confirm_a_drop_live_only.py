"""API-9: drop(i) of a receiver that is connecting (its process holds the handle but never answered Init:
connect() timed out) makes it gone: a send to it then raises ReceiverDiedError (cause died, version None,
SEND-4), not LocalProtocolError for a receiver not connected yet."""
import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r1 = ws.Receiver(s.handle(1), {"w": torch.zeros(4)})
_confirm.connect_inproc(s, [r1], workers=[1], timeout=20)
held = ws.Receiver(s.handle(0), {"w": torch.zeros(4)})  # holds receiver 0's end, never calls connect()
try:
    s.connect(timeout=0.3, workers=[0])
    _confirm.bug("setup: connect() returned for a receiver that never answered")
except ws.SyncTimeoutError:
    pass
s.drop(0)
try:
    v = s.send(workers=[0, 1], timeout=5)
    _confirm.bug(f"send to the dropped receiver returned {v}")
except ws.ReceiverDiedError as e:
    if e.workers != [0] or e.causes.get(0) != "died" or e.version is not None:
        _confirm.bug(f"wrong error after drop: workers={e.workers} causes={e.causes} version={e.version}")
    _confirm.fine(f"the dropped connecting receiver is gone: {e.causes}")
except ws.LocalProtocolError as e:
    _confirm.bug(f"drop(0) left the connecting receiver as it was: send says not connected: {e}")
