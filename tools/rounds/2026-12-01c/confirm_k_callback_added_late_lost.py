"""A done callback added from another thread while the first (slow) callback runs must still be called (API-11)."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
first_running = threading.Event()
second = threading.Event()


def slow(f):
    first_running.set()
    time.sleep(2.0)  # a checkpoint, a log upload...


def hook(f):
    second.set()


w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull")
    connect_inproc(s, [rx])
    f = s.send_async(timeout=10)
    f.add_done_callback(slow)
    rx.poll(10)
    if not first_running.wait(10):
        print("the first callback never ran")
    else:
        time.sleep(0.3)
        f.add_done_callback(hook)  # the callbacks are running: it must be run too, once
    ok = second.wait(10)
    rx.close()
if not ok:
    bug("a done callback added while the callbacks ran was never called (API-11)")
fine("the callback added while others ran was called")
