"""A connect() that timed out on a slow receiver (Init read, no Ready yet); a second connect() must wait for it
again and raise SyncTimeoutError naming it, not return as if every receiver were connected."""
import threading
import time

import torch
from _confirm import bug, fine, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
h0, h1 = s.handle(0), s.handle(1)
slow = Peer(h1, timeout=10)          # a receiver that reads Init but has not answered yet
r0 = ws.Receiver(h0)
t = threading.Thread(target=r0.connect, args=(10,), daemon=True)
t.start()
try:
    s.connect(timeout=1)
    bug("first connect() returned although receiver 1 never answered")
except ws.SyncTimeoutError as e:
    if e.workers != [1]:
        bug(f"first connect() named {e.workers}, expected [1]")
t.join(10)
init = slow.read()
assert init["type"] == "Init", init
t0 = time.monotonic()
try:
    s.connect(timeout=1)
    el = time.monotonic() - t0
    try:
        s.send(workers=[1], timeout=2)
        what = "a send to it then went through"
    except ws.LocalProtocolError as e:
        what = f"and a send to it then raised LocalProtocolError: {e}"
    except Exception as e:  # noqa: BLE001
        what = f"and a send to it then raised {type(e).__name__}"
    bug(f"second connect() returned after {el:.2f}s while receiver 1 was still connecting (no Ready), {what}")
except ws.SyncTimeoutError as e:
    if e.workers != [1]:
        bug(f"second connect() named {e.workers}, expected [1]")
# it answers now: a third connect() completes it and a send reaches both
slow.send(slow.ready_msg(init))
s.connect(timeout=5)
fine("a retried connect() waits for the receiver still connecting, names it at its timeout, and completes once it answers")
