"""Receiver 1 refuses its Init (its target does not match); the trainer drops it; a send to every receiver must
still name it as failed (ReceiverError, cause "error", its reason), since dropping a failed receiver changes
nothing (API-9)."""
import threading

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0))
r1 = ws.Receiver(s.handle(1), {"w": torch.zeros(5)})
def _c(r):
    try:
        r.connect(10)
    except Exception:  # noqa: BLE001
        pass


ts = [threading.Thread(target=_c, args=(r,), daemon=True) for r in (r0, r1)]
for t in ts:
    t.start()
try:
    s.connect(timeout=10)
    bug("connect() did not name the refusing receiver")
except ws.ReceiverError as e:
    assert e.workers == [1], e.workers
for t in ts:
    t.join(10)
before = None
try:
    s.send(timeout=5)
except ws.ReceiverError as e:
    before = (type(e).__name__, e.causes)
s.drop(1)
try:
    s.send(timeout=5)
    bug("a send to every receiver went through after drop(1)")
except ws.WeightSyncError as e:
    causes = getattr(e, "causes", None)
    if isinstance(e, ws.ReceiverDiedError) or causes != {1: "error"}:
        bug(f"after drop() of the failed receiver 1, a send names it as {type(e).__name__} causes={causes} "
            f"detail={getattr(e, 'details', {}).get(1)!r} (before the drop: {before})")
    if e.version is not None:
        bug(f"SEND-4 error carries version {e.version}")
s.close()
fine("drop() of a failed receiver changes nothing: a send still names it with its refusal")
