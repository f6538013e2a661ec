"""Receiver 0 answers Ack(error), receiver 1 never answers. wait() raises ReceiverError after SEND-7's window;
API-11: the done callback is called as soon as that outcome is decided, without waiting for receiver 1."""
import threading
import time

import _confirm
import d_helpers

ws = _confirm.module()
sender = ws.Sender(d_helpers.weights(), 2)
peers = [d_helpers.Scripted(sender.handle(0), on_receive=lambda m: "error").start(),
         d_helpers.Scripted(sender.handle(1), on_receive=lambda m: None).start()]
sender.connect(timeout=10)
future = sender.send_async(timeout=10)
called = threading.Event()
future.add_done_callback(lambda f: called.set())
start = time.monotonic()
try:
    future.wait(timeout=8)
    _confirm.bug("wait() returned although receiver 0 answered Ack(error)")
except ws.ReceiverError as e:
    decided = time.monotonic() - start
    if e.workers != [0]:
        _confirm.bug(f"wait() named {e.workers}, not [0]")
except ws.SyncTimeoutError as e:
    _confirm.bug(f"wait() timed out instead of raising receiver 0's error: {e}")
if not called.wait(8):
    _confirm.bug(f"wait() raised receiver 0's error after {decided:.1f} s, but the done callback was not called "
                 f"within 8 s more (receiver 1 is still silent; future.done()={future.done()})")
_confirm.fine(f"wait() raised after {decided:.2f} s and the callback ran by {time.monotonic() - start:.2f} s")
