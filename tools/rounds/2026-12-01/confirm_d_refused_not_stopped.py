"""A receiver whose target does not match refuses the Init: connect() raises WeightsMismatchError, and then
SM-R-8: `receiver.stopped` is true (state failed), for a push and for a pull receiver."""
import _confirm
import d_helpers
import torch

ws = _confirm.module()
sender = ws.Sender(d_helpers.weights(), 2)
bad = {"w": torch.zeros(3, 2), "b": torch.zeros(4)}  # wrong shape
recs = [ws.Receiver(sender.handle(0), bad), ws.Receiver(sender.handle(1), dict(bad), mode="pull")]
outs = [_confirm.in_thread(r.connect, 10) for r in recs]
try:
    sender.connect(timeout=10)
except ws.ReceiverError:
    pass
for (out, t), r in zip(outs, recs):
    t.join(10)
    if not isinstance(out.get("error"), ws.WeightsMismatchError):
        _confirm.bug(f"receiver {r.id}'s connect() ended with {out!r}")
seen = {r.mode: r.stopped for r in recs}
if not all(seen.values()):
    _confirm.bug(f"after connect() refused the Init (WeightsMismatchError), receiver.stopped is {seen}")
_confirm.fine(f"stopped after a refused Init: {seen}")
