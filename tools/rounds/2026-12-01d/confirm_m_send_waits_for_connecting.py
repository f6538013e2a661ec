"""Receiver 1 reads its Init and does not answer (connect() timed out on it: it is connecting). A send to every
receiver must raise LocalProtocolError at once (SEND-4), publishing nothing; a send to receiver 0 alone works."""
import threading
import time

import torch
from _confirm import bug, fine, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
h0, h1 = s.handle(0), s.handle(1)
slow = Peer(h1, timeout=10)
r0 = ws.Receiver(h0)
t = threading.Thread(target=r0.connect, args=(10,), daemon=True)
t.start()
try:
    s.connect(timeout=1)
    bug("connect() returned although receiver 1 never answered")
except ws.SyncTimeoutError as e:
    assert e.workers == [1], e.workers
t.join(10)
init = slow.read()
assert init["type"] == "Init", init
if s.send(workers=[0], timeout=5) != 1:
    bug("a send to the live receiver did not return version 1")
t0 = time.monotonic()
try:
    s.send(timeout=3)
    bug(f"a send to the connecting receiver 1 went through ({time.monotonic() - t0:.1f}s)")
except ws.LocalProtocolError:
    el = time.monotonic() - t0
except ws.WeightSyncError as e:
    bug(f"a send to every receiver while receiver 1 is connecting raised {type(e).__name__} "
        f"{getattr(e, 'workers', '')} after {time.monotonic() - t0:.1f}s instead of LocalProtocolError at once")
if el > 1.0:
    bug(f"LocalProtocolError came only after {el:.1f}s")
if s.version != 1:
    bug(f"the refused send moved the version to {s.version}")
s.close()
fine("a send that targets a connecting receiver raises LocalProtocolError at once, publishing nothing")
