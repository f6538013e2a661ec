"""Targets: receiver 0 gone, receiver 1 never connected: the send names the gone one (SEND-4)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0))
connect_inproc(s, [r0], workers=[0])
r0.close()  # receiver 0 goes away
time.sleep(0.5)
try:
    s.send({"w": torch.ones(4)}, timeout=5)
    bug("send returned")
except ws.ReceiverDiedError as e:
    if e.workers == [0] and e.version is None and s.version == 0:
        fine("ReceiverDiedError naming receiver 0, nothing published")
    bug(f"ReceiverDiedError with workers {e.workers}, version {e.version}")
except ws.LocalProtocolError as e:
    bug(f"LocalProtocolError ({e}): the gone receiver 0 is not named")
