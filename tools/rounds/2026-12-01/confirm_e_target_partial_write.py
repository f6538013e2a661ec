"""A pull receiver with a dict target; the worker gives the target's last tensor another shape, then polls a
new version. ACK-7: the apply fails (ReceiverError) and no byte of the target is written: "w" and "b" keep
version 0."""
import _confirm
import e_helpers as h
import torch

ws = _confirm.module()
w0 = h.weights(0)
sender = ws.Sender(w0, 1)
target = h.zeros_like(w0)
r = ws.Receiver(sender.handle(0), target, mode="pull")
h.connect(ws, sender, [r])
assert h.same(target["w"], w0["w"]), "connect did not apply version 0"
target["step"] = torch.zeros(3, dtype=torch.int64)  # the worker reshaped its last entry
w1 = h.weights(1)
fut = sender.send_async(w1, timeout=10)
got = None
try:
    for _ in range(50):
        got = r.poll(timeout=0.2)
        if got is not None:
            break
except ws.ReceiverError as e:
    got = e
try:
    fut.wait(10)
except ws.ReceiverError:
    pass
if not isinstance(got, ws.ReceiverError):
    _confirm.bug(f"poll() gave {got!r}, not ReceiverError, for a mismatching target")
written = [n for n in ("w", "b") if h.same(target[n], w1[n])]
kept = [n for n in ("w", "b") if h.same(target[n], w0[n])]
r.close()
sender.close()
if written:
    _confirm.bug(f"the failed apply (ReceiverError) wrote version 1 into target entries {written} before the "
                 "mismatching one")
if kept != ["w", "b"]:
    _confirm.bug(f"target entries changed by the failed apply: kept only {kept}")
_confirm.fine("the failed apply left every target byte as it was")
