"""Pull receiver: a reader thread is inside reading() for 1 s when a version arrives; the main thread's poll(5)
must wait for the block to end and apply the version (API-3, CONS-2), not raise."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=10)
inside = threading.Event()


def reader():
    with r.reading(timeout=5):
        inside.set()
        time.sleep(1.0)


rt = threading.Thread(target=reader, daemon=True)
rt.start()
inside.wait(5)
f = s.send_async({"w": torch.ones(4)})
time.sleep(0.2)
t0 = time.monotonic()
try:
    got = r.poll(5)
except ws.LocalProtocolError as e:
    rt.join(5)
    s.close()
    r.close()
    bug(f"poll() in the main thread raised LocalProtocolError while another thread was inside reading(): {e}")
el = time.monotonic() - t0
rt.join(5)
if got != 1:
    bug(f"poll(5) gave {got!r}")
with r.reading(timeout=2):
    w = r.weights["w"].clone()
f.wait(5)
s.close()
r.close()
if not torch.equal(w, torch.ones(4)):
    bug("the applied weights are not version 1's")
fine(f"poll(5) waited {el:.2f}s for the other thread's block and applied version {got}")
