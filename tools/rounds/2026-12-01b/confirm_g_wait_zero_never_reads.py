"""future.wait(0) after every target acked (Acks arrived, unread) must return the version (SEND-5, SEND-1)."""
import time

import _confirm
import g_helpers as h

ws = _confirm.module()
own = {k: v.clone() for k, v in h.weights(0).items()}
sender = ws.Sender(own, 2)
rs = [ws.Receiver(sender.handle(i)) for i in range(2)]  # push: they apply and ack on their own
h.connect(sender, rs)
h.load(h.weights(1), own)
fut = sender.send_async(timeout=10)
if not h.wait_until(lambda: all(r.version == fut.version for r in rs), 10):
    raise SystemExit("harness: receivers did not apply")
time.sleep(0.5)  # their Acks are in the sender's channels now
try:
    got = fut.wait(0)
except ws.SyncTimeoutError as e:
    _confirm.bug(f"wait(0) raised SyncTimeoutError naming {e.workers}, whose Acks of version {fut.version} had "
                 f"arrived (both report version {[r.version for r in rs]})")
if got != fut.version:
    _confirm.bug(f"wait(0) returned {got}, not {fut.version}")
sender.close()
_confirm.fine(f"wait(0) returned {got}")
