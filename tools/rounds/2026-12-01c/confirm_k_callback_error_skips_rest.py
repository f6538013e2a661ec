"""Two done callbacks on one future, the first raises: the second must still be called (API-11)."""
import logging
import threading

import torch
from _confirm import bug, connect_inproc, fine, module

logging.getLogger("weightsync").setLevel(logging.CRITICAL)
ws = module()
called = threading.Event()


def bad(f):
    raise RuntimeError("a metrics hook that fails")


def good(f):
    called.set()


w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull")
    connect_inproc(s, [rx])
    f = s.send_async(timeout=10)
    f.add_done_callback(bad)
    f.add_done_callback(good)
    if rx.poll(10) != f.version:
        print("poll did not apply the version")
    try:
        f.wait(10)
    except ws.WeightSyncError as e:
        print("wait raised", type(e).__name__, e)
    ok = called.wait(8)
    rx.close()
if not ok:
    bug("the second done callback was never called after the first one raised (API-11)")
fine("the callback after a raising one was called")
