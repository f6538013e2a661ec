"""Receiver 0 is live; receiver 1's process is slow to answer its Init while a supervisor thread waits in
connect(workers=[1], timeout=4). A send to receiver 0 from the training thread must go through meanwhile (API-7)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
h1 = s.handle(1)
r0 = ws.Receiver(s.handle(0))
connect_inproc(s, [r0], workers=[0], timeout=10)
slow = Peer(h1, timeout=10)
sup, st = in_thread(s.connect, 4, workers=[1])
init = slow.read()                       # the Init went out: the supervisor waits for its Ready
time.sleep(0.3)
t0 = time.monotonic()
try:
    v = s.send(workers=[0], timeout=1.5)
except ws.SyncTimeoutError as e:
    bug(f"a send to live receiver 0 raised SyncTimeoutError after {time.monotonic() - t0:.1f}s while connect() "
        f"waited for receiver 1: {str(e)[:90]}")
el = time.monotonic() - t0
slow.send(slow.ready_msg(init))
st.join(10)
if "error" in sup:
    bug(f"connect(workers=[1]) raised {sup['error']!r}")
if v != 1 or el > 1.5:
    bug(f"the send returned {v} after {el:.1f}s")
s.close()
r0.close()
fine(f"the send to receiver 0 returned {v} after {el:.2f}s while connect() waited for receiver 1")
