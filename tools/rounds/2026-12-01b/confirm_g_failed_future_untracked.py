"""One target fails its apply, the other acks: done() must turn true and figures show both (API-2, API-11)."""
import _confirm
import g_helpers as h
import torch

ws = _confirm.module()
own = {k: v.clone() for k, v in h.weights(0).items()}
sender = ws.Sender(own, 2)
target = h.zeros()
r0 = ws.Receiver(sender.handle(0), target, mode="pull")
r1 = ws.Receiver(sender.handle(1), mode="pull")
h.connect(sender, [r0, r1])
target["w"] = torch.zeros(6, 4)  # receiver 0's next apply fails (ACK-7)
h.load(h.weights(1), own)
fut = sender.send_async(timeout=10)
try:
    r0.poll(timeout=5)
    raise SystemExit("harness: receiver 0's apply did not fail")
except ws.ReceiverError:
    pass
if fut.done():
    raise SystemExit("harness: done() before receiver 1 answered")
assert r1.poll(timeout=5) == fut.version
ok = h.wait_until(fut.done, 5)
figs = fut.figures
if not ok:
    sender.close()
    _confirm.bug(f"every target answered (0 error, 1 ok) but done() stays False after 5 s; figures.causes "
                 f"{figs.causes}; after close(), done() is {fut.done()}")
if figs.causes != {0: "error", 1: "ok"}:
    _confirm.bug(f"done() but figures.causes {figs.causes}")
try:
    fut.wait(0)
    _confirm.bug("wait() returned for a failed send")
except ws.ReceiverError as e:
    if e.workers != [0]:
        _confirm.bug(f"wait() names {e.workers}")
sender.close()
_confirm.fine(f"done() true, figures.causes {figs.causes}")
