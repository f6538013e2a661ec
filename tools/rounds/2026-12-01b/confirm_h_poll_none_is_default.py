"""poll(timeout=None) must wait for the next version (None waits without bound, section 10; API-3)."""
import threading
import time

import _confirm
import torch

ws = _confirm.module()
w = {"w": torch.arange(6, dtype=torch.float32)}
sender = ws.Sender(w, 1)
r = ws.Receiver(sender.handle(0), mode="pull")
_confirm.connect_inproc(sender, [r])


def later():
    time.sleep(1.0)
    sender.send_async(timeout=5)


threading.Thread(target=later, daemon=True).start()
threading.Timer(12.0, r.close).start()  # a bound on the wait either way: close() ends a waiting poll (API-7)
t0 = time.monotonic()
v = r.poll(None)
el = time.monotonic() - t0
if v == 1:
    _confirm.fine(f"poll(None) waited {el:.2f} s and applied version 1")
_confirm.bug(f"poll(None) returned {v!r} after {el:.2f} s, though version 1 was sent 1 s in")
