"""SEND-5: wait() may be called again after a timeout: a pull receiver that had not polled times out
future.wait(0.3); once it polls and acks, future.wait() returns the version."""
import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), {"w": torch.zeros(4)}, mode="pull")
_confirm.connect_inproc(s, [r], timeout=20)
f = s.send_async()
try:
    f.wait(0.3)
    _confirm.bug("setup: wait returned before the receiver polled")
except ws.SyncTimeoutError:
    pass
got = r.poll(5)
if got != f.version:
    _confirm.bug(f"setup: poll() gave {got}")
try:
    v = f.wait(5)
except ws.SyncTimeoutError as e:
    _confirm.bug(f"a second wait() after the receiver acked still raises the first timeout: {e.causes}")
if v != f.version:
    _confirm.bug(f"wait() returned {v}")
_confirm.fine(f"the second wait returned {v}")
