"""A send(timeout=None) waits in one thread on a receiver that never acks; another thread drop()s it.
API-9/API-7: drop() returns (bounded) and the waiting send raises ReceiverDiedError naming it."""
import time

import _confirm
import d_helpers

ws = _confirm.module()
sender = ws.Sender(d_helpers.weights(), 2)
peers = [d_helpers.Scripted(sender.handle(0)).start(),
         d_helpers.Scripted(sender.handle(1), on_receive=lambda m: None).start()]  # 1 never acks
sender.connect(timeout=10)
out, t = _confirm.in_thread(sender.send, timeout=None)
time.sleep(1.0)  # the send is now waiting for receiver 1
start = time.monotonic()
try:
    sender.drop(1, timeout=5)
except ws.SyncTimeoutError as e:
    _confirm.bug(f"drop(1, timeout=5) raised SyncTimeoutError after {time.monotonic() - start:.1f} s while a send "
                 f"waited on receiver 1: {e}")
took = time.monotonic() - start
t.join(10)
if t.is_alive():
    _confirm.bug(f"drop(1) returned after {took:.1f} s but the waiting send is still waiting")
err = out.get("error")
if not isinstance(err, ws.ReceiverDiedError) or err.workers != [1]:
    _confirm.bug(f"the waiting send ended with {out!r}, not ReceiverDiedError naming [1]")
_confirm.fine(f"drop(1) returned in {took:.2f} s; the waiting send raised ReceiverDiedError {err.workers}")
