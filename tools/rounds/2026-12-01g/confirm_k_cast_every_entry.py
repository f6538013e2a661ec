"""An fp32 trainer with an int64 step counter, `dtypes=torch.bfloat16`, one copying receiver with target=None.
After 257 sends (the counter incremented in place each time) the receiver's `weights` must hold the counter as
int64 257 and the floats as their bf16 rounding (LAYOUT-3: integer entries travel as they are)."""
import threading

import torch
from _confirm import bug, fine, module

ws = module()
w = {"w": torch.linspace(-1, 1, 8), "step": torch.zeros((), dtype=torch.int64)}
s = ws.Sender(w, 1, dtypes=torch.bfloat16)
r = ws.Receiver(s.handle(0))
t = threading.Thread(target=r.connect, args=(20,), daemon=True)
t.start()
s.connect(timeout=20)
t.join(20)
for _ in range(257):
    w["step"].add_(1)
    with torch.no_grad():
        w["w"].mul_(1.001)
    v = s.send(timeout=10)
with r.reading(timeout=10):
    step = r.weights["step"].clone()
    got = r.weights["w"].clone()
s.close()
r.close()
if step.dtype != torch.int64 or int(step) != 257:
    bug(f"after {v} versions the bf16 worker holds the int64 counter as {step.dtype} {step.item()} (trainer: 257): "
        "the cast slots converted an integer entry (LAYOUT-3)")
if got.dtype != torch.bfloat16 or not torch.equal(got, w["w"].to(torch.bfloat16)):
    bug(f"the floating entry arrived as {got.dtype}, not the bf16 rounding of the trainer's values (LAYOUT-3)")
fine("integer entries travel as they are; floating ones as bf16")
