"""A pull receiver. Thread A holds a reading() block for 12 s; a version is sent and poll(timeout=None) in thread P
waits for A. Another thread calls close(): API-7 wants the waiting poll() ended (returning None) within the reaction
bound (10 s), and close() to return within it."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=15)
inside = threading.Event()


def reader_a():
    with r.reading(timeout=5):
        inside.set()
        time.sleep(12)


threading.Thread(target=reader_a, daemon=True).start()
inside.wait(5)
s.send_async({"w": torch.ones(4)}, timeout=5)
time.sleep(0.2)
out, tp = in_thread(r.poll, timeout=None)
time.sleep(0.3)
t0 = time.monotonic()
closed, tc = in_thread(r.close)
tp.join(10.3)
ended = time.monotonic() - t0
tc.join(1)
done = not tp.is_alive()
s.close()
if not done:
    bug(f"close() was called {ended:.1f} s ago (close {'returned' if not tc.is_alive() else 'still running'}), "
        "and the poll() waiting for a reading() block still waits")
if out.get("result") is not None or "error" in out:
    raise SystemExit(f"unexpected poll outcome {out!r}")
fine(f"close() ended the waiting poll() (None) after {ended:.2f} s")
