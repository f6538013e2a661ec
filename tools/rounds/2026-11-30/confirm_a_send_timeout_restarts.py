"""SEND-2 / API-2: send's timeout bounds the whole call, the wait for a free slot and for acks together.
max_slots=2 and a pull receiver pins both slots; it polls once 4.5 s into a send(timeout=5), which frees a
slot; it never acks the new version. The send must raise SyncTimeoutError by 5 s + 3 s grace, not ~9.5 s."""
import threading
import time

import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 1, max_slots=2)
r = ws.Receiver(s.handle(0), {"w": torch.zeros(4)}, mode="pull")
_confirm.connect_inproc(s, [r], timeout=20)
s.send_async()
s.send_async()


def late_poll():
    time.sleep(4.5)
    r.poll(5)


threading.Thread(target=late_poll, daemon=True).start()
t0 = time.monotonic()
try:
    v = s.send(timeout=5)
    _confirm.bug(f"setup: send returned {v}")
except ws.SyncTimeoutError as e:
    took = time.monotonic() - t0
    if e.version is None:
        _confirm.bug(f"setup: no slot freed ({took:.1f} s)")
    if took > 8.0:
        _confirm.bug(f"send(timeout=5) raised after {took:.1f} s (bound 5 s + 3 s grace)")
    _confirm.fine(f"send(timeout=5) raised after {took:.1f} s for version {e.version}")
