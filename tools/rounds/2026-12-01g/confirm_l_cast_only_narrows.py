"""Mixed-precision weights, `w` float32 and `norm` bfloat16, and a worker asking for float16 slots
(`dtypes=torch.float16`, LAYOUT-3): with target=None its weights must be float16 for every floating entry, each
the weights rounded to float16, both at connect and after a send."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.linspace(-1, 1, 8), "norm": torch.linspace(0.5, 2, 8).to(torch.bfloat16)}
s = ws.Sender(w, 1, dtypes=torch.float16)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=15)
got0 = {k: v.dtype for k, v in r.weights.items()}
w2 = {"w": w["w"] * 3, "norm": (w["norm"] * 3).to(torch.bfloat16)}
s.send_async(w2, timeout=10)
r.poll(10)
got = {k: v.clone() for k, v in r.weights.items()}
r.close()
s.close()
if any(d != torch.float16 for d in got0.values()) or any(v.dtype != torch.float16 for v in got.values()):
    bug(f"a float16 worker's weights have dtypes {got0} (LAYOUT-3: every floating entry in the chosen dtype)")
bad = [k for k in w2 if not torch.equal(got[k], w2[k].to(torch.float16))]
if bad:
    bug(f"entries {bad} are not the weights rounded to float16 (LAYOUT-3)")
fine("every floating entry cast to float16")
