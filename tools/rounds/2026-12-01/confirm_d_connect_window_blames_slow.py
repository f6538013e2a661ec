"""Receiver 0 refuses the Init at once; receiver 1 answers Ready(ok) only 3 s later. connect(timeout=20)
raises after SEND-7's window naming receiver 0 alone (a ReceiverError, not a SyncTimeoutError: the call's
timeout has not passed); a second connect() then waits for receiver 1 (INIT-5)."""
import time

import _confirm
import d_helpers

ws = _confirm.module()
sender = ws.Sender(d_helpers.weights(), 2)
peers = [d_helpers.Scripted(sender.handle(0), ready="target does not match").start(),
         d_helpers.Scripted(sender.handle(1), ready_delay=3.0).start()]
start = time.monotonic()
try:
    sender.connect(timeout=20)
    _confirm.bug("connect() returned although receiver 0 refused")
except ws.ReceiverError as e:
    took = time.monotonic() - start
    if e.workers != [0] or isinstance(e, ws.SyncTimeoutError):
        _confirm.bug(f"connect(timeout=20) raised after {took:.1f} s naming {e.workers} with causes {e.causes} "
                     f"({type(e).__name__}); receiver 1 was only slow, not at fault")
try:
    sender.connect(timeout=10)
except ws.WeightSyncError as e:
    _confirm.bug(f"the second connect() raised {type(e).__name__}: {e}")
_confirm.fine(f"connect() named [0] after {took:.2f} s; the second connect() waited for receiver 1")
