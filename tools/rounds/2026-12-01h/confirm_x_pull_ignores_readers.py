"""A pull receiver; another thread of the worker opens `reading()`, reads the weights, holds the block 1.5 s and
reads them again. Meanwhile the trainer sends and the polling thread calls poll(timeout=5): the apply must wait for
that block (CONS-2), so the block sees one version throughout (CONS-1)."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(8)}
s = ws.Sender(w, 1)
r = ws.Receiver(s.handle(0), mode="pull")
seen = {}
inside = threading.Event()


def reader():
    with r.reading(timeout=10):
        seen["first"] = r.weights["w"][0].item()
        inside.set()
        time.sleep(1.5)
        seen["last"] = r.weights["w"][0].item()


try:
    connect_inproc(s, [r], timeout=20)
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    inside.wait(10)
    w["w"].fill_(5.0)
    fut = s.send_async(timeout=10)
    time.sleep(0.2)
    got = r.poll(timeout=5)
    t.join(10)
    fut.wait(timeout=5)
finally:
    s.close()
    r.close()
if seen.get("first") != seen.get("last"):
    bug(f"inside one reading() block of another thread the weights went from {seen.get('first')} to "
        f"{seen.get('last')}: poll() applied version {got} without waiting for the block (CONS-2, CONS-1)")
if got != 1:
    bug(f"poll() returned {got}")
fine("poll() waited for the other thread's reading() block")
