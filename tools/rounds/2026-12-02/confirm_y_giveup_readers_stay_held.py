"""A pull receiver. Thread A holds a reading() block for 7 s. A version is sent and poll(timeout=0.6) waits for A
(an apply waits). Meanwhile thread B calls reading(timeout=6): held back by the waiting apply (CONS-2). At 0.6 s the
poll gives up (API-3): no apply runs or waits, so B enters then, beside A; it must not wait on until its own
timeout."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=15)
inside = threading.Event()
b_in = {}


def reader_a():
    with r.reading(timeout=5):
        inside.set()
        time.sleep(7)


def reader_b():
    t0 = time.monotonic()
    try:
        with r.reading(timeout=6):
            b_in["waited"] = time.monotonic() - t0
    except ws.SyncTimeoutError as e:
        b_in["error"] = e


ta = threading.Thread(target=reader_a, daemon=True)
ta.start()
inside.wait(5)
f = s.send_async({"w": torch.ones(4)}, timeout=5)
time.sleep(0.2)
t0 = time.monotonic()
out, tp = in_thread(r.poll, timeout=0.6)
time.sleep(0.2)
tb = threading.Thread(target=reader_b, daemon=True)
tb.start()
tp.join(10)
polled = time.monotonic() - t0
tb.join(10)
ta.join(10)
r.close()
s.close()
if out.get("result") is not None or "error" in out:
    raise SystemExit(f"unexpected poll outcome {out!r}")
if "error" in b_in or b_in.get("waited", 99) > 3.0:
    bug(f"poll() gave up after {polled:.2f} s, yet B's reading() waited on: {b_in}")
fine(f"poll() gave up after {polled:.2f} s; B's reading() entered after {b_in['waited']:.2f} s")
