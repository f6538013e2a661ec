"""reading(timeout=0) while an apply waits (held back by another thread's block) must raise SyncTimeoutError at
once, within the 3 s grace, not wait for the apply (API-3, CONS-2)."""
import threading
import time

import _confirm
import torch

ws = _confirm.module()
sender = ws.Sender({"w": torch.arange(4, dtype=torch.float32)}, 1)
r = ws.Receiver(sender.handle(0))  # push
_confirm.connect_inproc(sender, [r])

inside = threading.Event()


def holder():
    with r.reading(timeout=5):
        inside.set()
        time.sleep(6.0)  # the apply of version 1 waits for this block


threading.Thread(target=holder, daemon=True).start()
inside.wait(5)
fut = sender.send_async(timeout=5)
time.sleep(0.7)  # the push thread has taken the Receive and waits to apply
if r.version != 0:
    _confirm.bug(f"setup: version {r.version} applied inside another thread's reading() block")
t0 = time.monotonic()
try:
    with r.reading(timeout=0):
        el = time.monotonic() - t0
        _confirm.bug(f"reading(timeout=0) entered after {el:.1f} s while an apply waited (version now {r.version})")
except ws.SyncTimeoutError:
    el = time.monotonic() - t0
    if el > 3.0:
        _confirm.bug(f"reading(timeout=0) raised only after {el:.1f} s")
    _confirm.fine(f"reading(timeout=0) raised SyncTimeoutError after {el:.2f} s")
