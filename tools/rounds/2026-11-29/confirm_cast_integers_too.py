"""dtypes=torch.bfloat16: floating entries are cast, an int64 entry stays int64 (LAYOUT-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.full((4,), 0.5), "step": torch.tensor(257, dtype=torch.int64)}, 1, dtypes=torch.bfloat16)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r])
w, step = r.weights["w"], r.weights["step"]
if w.dtype != torch.bfloat16:
    bug(f"w arrived as {w.dtype}, not bfloat16")
if step.dtype != torch.int64 or int(step) != 257:
    bug(f"the int64 entry 'step' arrived as {step.dtype} {step.item()}")
fine("w bfloat16, step int64 257")
