"""A trainer with an FP8 weight (`torch.float8_e4m3fn`, not in Table 12-2) beside a float32 one: `Sender(...)` and
`pack(...)` must each raise ValueError naming the entry (SEC-7), not accept it for a receiver to refuse later."""
import torch
from _confirm import bug, fine, module

ws = module()


def weights():
    return {"w": torch.ones(4), "w_fp8": torch.tensor([0.5, 1.0, 2.0, -3.0]).to(torch.float8_e4m3fn)}


seen = []
try:
    s = ws.Sender(weights(), 1)
except ValueError as e:
    seen.append(("Sender", str(e)))
else:
    s.close()
    bug("Sender() accepted a float8_e4m3fn weight, a dtype Table 12-2 does not define (SEC-7)")
if "pack" in ws.CAPABILITIES:
    try:
        ws.pack(weights())
    except ValueError as e:
        seen.append(("pack", str(e)))
    else:
        bug("pack() accepted a float8_e4m3fn weight (SEC-7)")
unnamed = [where for where, text in seen if "w_fp8" not in text]
if unnamed:
    bug(f"the ValueError of {unnamed} does not name the entry: {seen}")
fine(f"refused: {[(w, t[:80]) for w, t in seen]}")
