"""One pull worker; the trainer publishes versions 1 and 2 with send_async(); the worker polls once (applies 2, whose
Ack answers 1 too, ACK-2). Once f1 is done and wait() returned 1, f1.figures must show worker 0's answer: an
answered_s entry and cause 'ok' (API-11)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(8)}
s = ws.Sender(w, 1)
r = ws.Receiver(s.handle(0), mode="pull")
try:
    connect_inproc(s, [r], timeout=20)
    w["w"].fill_(1.0)
    f1 = s.send_async(timeout=10)
    w["w"].fill_(2.0)
    f2 = s.send_async(timeout=10)
    time.sleep(0.5)
    got = r.poll(timeout=5)
    v1, v2 = f1.wait(timeout=5), f2.wait(timeout=5)
    fig1, fig2 = f1.figures, f2.figures
    done = f1.done()
finally:
    s.close()
    r.close()
if got != 2:
    fine(f"(poll applied {got}: nothing coalesced, the check does not apply)") if got == 1 else bug(f"poll {got}")
if not done or v1 != 1:
    bug(f"f1 done={done}, wait={v1}")
if 0 not in fig1.answered_s or fig1.causes.get(0) != "ok":
    bug(f"version 1 completed (wait() returned {v1}, done() true) but its final figures say worker 0 never "
        f"answered: answered_s={fig1.answered_s}, causes={fig1.causes} (version 2's: {fig2.causes}) (API-11)")
fine(f"f1.figures shows worker 0's answer: {fig1.causes}")
