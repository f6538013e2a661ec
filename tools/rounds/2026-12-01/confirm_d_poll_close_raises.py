"""A pull receiver's poll(timeout=15) waits in a thread; the main thread calls receiver.close().
API-7: close() ends the waiting poll(), which returns None (within the reaction bound)."""
import time

import _confirm
import d_helpers

ws = _confirm.module()
sender = ws.Sender(d_helpers.weights(), 1)
r = ws.Receiver(sender.handle(0), d_helpers.target(), mode="pull")
_confirm.connect_inproc(sender, [r], timeout=10)
out, t = _confirm.in_thread(r.poll, 15)
time.sleep(0.5)
start = time.monotonic()
r.close()
t.join(12)
if t.is_alive():
    _confirm.bug("poll() still waits 12 s after close()")
if "error" in out:
    _confirm.bug(f"the waiting poll() raised {type(out['error']).__name__} when another thread closed the receiver: "
                 f"{out['error']}")
if out.get("result") is not None:
    _confirm.bug(f"poll() returned {out['result']!r}")
_confirm.fine(f"poll() returned None {time.monotonic() - start:.2f} s after close()")
