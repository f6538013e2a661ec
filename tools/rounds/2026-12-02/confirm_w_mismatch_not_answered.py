"""A worker built for another model (its target has a tensor of another shape) connects inside `with Receiver(...)`,
as workers do: its connect() raises WeightsMismatchError and the block closes it. The trainer's connect(timeout=8)
must raise ReceiverError naming receiver 0, with the mismatch in `.details`, at once (INIT-3, INIT-5)."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(8), "b": torch.zeros(2)}, 1)
h = s.handle(0)


r = ws.Receiver(h, {"w": torch.zeros(8), "b": torch.zeros(3)})  # made before the trainer's connect()


def worker():
    with r:
        r.connect(timeout=10)


out, t = in_thread(worker)
t0 = time.monotonic()
try:
    s.connect(timeout=8)
    err = None
except ws.WeightSyncError as e:
    err = e
took = time.monotonic() - t0
t.join(10)
s.close()
worker_err = type(out.get("error")).__name__
if not isinstance(out.get("error"), ws.WeightsMismatchError):
    bug(f"the worker's connect raised {worker_err}, not WeightsMismatchError")
causes = getattr(err, "causes", None)
if not isinstance(err, ws.ReceiverError) or causes != {0: "error"} or took > 5:
    bug(f"the worker refused its target (WeightsMismatchError) but the trainer's connect raised "
        f"{type(err).__name__} after {took:.1f} s, causes {causes}, details {getattr(err, 'details', None)} "
        "(INIT-3, INIT-5)")
fine(f"trainer's connect raised ReceiverError after {took:.1f} s: {err.details[0][:80]}")
