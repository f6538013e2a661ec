"""A pull receiver; another thread holds a reading() block for 4 s. A version is sent, then poll(timeout=0.5):
API-3 bounds poll()'s wait for the readers by its timeout: it returns None within 0.5 s (+3 s grace), the version
stays pending, and a poll() after the block ended applies it."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=15)
inside = threading.Event()


def reader():
    with r.reading(timeout=5):
        inside.set()
        time.sleep(4.5)


rt = threading.Thread(target=reader, daemon=True)
rt.start()
inside.wait(5)
f = s.send_async({"w": torch.ones(4)}, timeout=5)
time.sleep(0.2)
t0 = time.monotonic()
out, t = in_thread(r.poll, timeout=0.5)
t.join(10)
took = time.monotonic() - t0
rt.join(6)
later = r.poll(timeout=3)
f.wait(5)
r.close()
s.close()
if "error" in out:
    raise SystemExit(f"unexpected: {out!r}")
if took > 3.5 or out.get("result") is not None:
    bug(f"poll(timeout=0.5) beside a 4.5 s reading() block returned {out.get('result')!r} after {took:.1f} s")
fine(f"poll(timeout=0.5) returned None after {took:.2f} s; the next poll applied {later}")
