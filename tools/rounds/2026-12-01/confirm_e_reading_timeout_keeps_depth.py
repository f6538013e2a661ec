"""A push receiver. Thread A holds a reading() block while a version waits to be applied; the main thread's
reading(timeout=0.3) times out (SyncTimeoutError, as API-3 says). Later the main thread opens a fresh reading()
block and a new version is sent meanwhile: CONS-2, the apply waits for that block to end, so inside it the
version and the weights do not change."""
import threading
import time

import _confirm
import e_helpers as h

ws = _confirm.module()
w0 = h.weights(0)
sender = ws.Sender(w0, 1)
r = ws.Receiver(sender.handle(0))
h.connect(ws, sender, [r])
release = threading.Event()
inside = threading.Event()


def hold():
    with r.reading(timeout=10):
        inside.set()
        release.wait(15)


a = threading.Thread(target=hold, daemon=True)
a.start()
inside.wait(10)
f1 = sender.send_async(h.weights(1), timeout=10)
time.sleep(0.7)  # the apply of version 1 now waits for thread A
try:
    with r.reading(timeout=0.3):
        _confirm.bug("reading(timeout=0.3) entered while an apply waited (not what this script tests)")
except ws.SyncTimeoutError:
    pass
release.set()
a.join(10)
f1.wait(10)
if not h.wait_until(lambda: r.version == 1, 10):
    _confirm.bug(f"version 1 never applied: {r.version}")
with r.reading(timeout=5):
    before = r.version
    snap = {k: v.clone() for k, v in r.weights.items()}
    f2 = sender.send_async(h.weights(2), timeout=10)
    time.sleep(1.5)
    after = r.version
    changed = [k for k, v in r.weights.items() if not h.same(v, snap[k])]
f2.wait(10)
r.close()
sender.close()
if after != before or changed:
    _confirm.bug(f"after a reading() that timed out, a new reading() block saw version {before} then {after} and "
                 f"entries {changed} change inside it")
_confirm.fine(f"version {before} held still inside the block; {f2.version} applied after it")
