"""LIFE-8: receiver 1 answers a version with Ack(error), receiver 0 (pull) never answers; the sender
closes. The future is done and wait() raises receiver 1's failure (ReceiverError, cause error), not
ClosedError."""
import time

import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
tg0, tg1 = {"w": torch.zeros(4)}, {"w": torch.zeros(4)}
r0 = ws.Receiver(s.handle(0), tg0, mode="pull")
r1 = ws.Receiver(s.handle(1), tg1, mode="push")
_confirm.connect_inproc(s, [r0, r1], timeout=20)
tg1["w"] = torch.zeros(5)  # receiver 1's next apply fails (ACK-7)
f = s.send_async()
end = time.monotonic() + 10
while 1 not in f.figures.causes and time.monotonic() < end:
    f.done()  # reads the answers that arrived (API-2)
    time.sleep(0.05)
if f.figures.causes.get(1) != "error":
    _confirm.bug(f"setup: receiver 1's Ack(error) was not seen: {f.figures.causes}")
s.close()
if not f.done():
    _confirm.bug("the future is not done after close()")
try:
    v = f.wait(0)
    _confirm.bug(f"wait() returned {v}")
except ws.ReceiverError as e:
    if 1 not in e.workers or e.causes.get(1) != "error":
        _confirm.bug(f"wrong failure: workers={e.workers} causes={e.causes}")
    _confirm.fine(f"wait() raises the failure: {type(e).__name__} causes={e.causes}")
except ws.ClosedError as e:
    _confirm.bug(f"wait() raises ClosedError though receiver 1 had failed: {e}")
