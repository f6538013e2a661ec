"""A pull worker: an inference thread holds a reading() block for 6 s; meanwhile the trainer publishes version 1
and the main thread calls poll(timeout=0.3). The version is held back by the block, so poll() must return None
within its timeout plus the 3 s grace (API-3, API-7); a later poll(), once the block ended, applies it."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
inside, leave = threading.Event(), threading.Event()


def reader():
    with r.reading(timeout=10):
        inside.set()
        leave.wait(6)


try:
    connect_inproc(s, [r], timeout=20)
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    inside.wait(10)
    fut = s.send_async({"w": torch.ones(8)}, timeout=10)
    time.sleep(0.3)
    t0 = time.monotonic()
    got = r.poll(timeout=0.3)
    took = time.monotonic() - t0
    leave.set()
    t.join(10)
    later = r.poll(timeout=5) if got is None else got
    acked = fut.wait(timeout=5)
finally:
    s.close()
    r.close()
if got is not None or took > 3.3:
    bug(f"poll(timeout=0.3) with another thread inside reading() took {took:.1f} s and returned {got}: it waited "
        "for the block past its timeout (API-3, API-7)")
if later != 1 or acked != 1:
    bug(f"the later poll() returned {later}, the send's wait {acked}")
fine(f"poll(timeout=0.3) returned None after {took:.2f} s; the next poll applied {later}")
