"""A mixed-precision trainer (bf16 weight, fp32 norm) with dtypes=torch.bfloat16: the worker must
receive every floating entry as bf16, the fp32 one rounded to bf16 (LAYOUT-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
torch.manual_seed(0)
w = {"proj.weight": torch.randn(8, 4).to(torch.bfloat16), "norm.weight": torch.randn(4) + 1.0,
     "step": torch.tensor(7)}
with ws.Sender(w, 1, dtypes=torch.bfloat16) as sender:
    r = ws.Receiver(sender.handle(0), mode="pull")
    connect_inproc(sender, [r], timeout=20)
    try:
        got = {k: v.clone() for k, v in r.weights.items()}
    finally:
        r.close()
dt = {k: str(v.dtype) for k, v in got.items()}
if got["norm.weight"].dtype != torch.bfloat16:
    bug(f"dtypes=torch.bfloat16 left an fp32 entry uncast: the worker got {dt}")
if not torch.equal(got["norm.weight"], w["norm.weight"].to(torch.bfloat16)) or got["step"].dtype != torch.int64:
    bug(f"cast bytes wrong: {dt}")
fine(f"every floating entry arrived as bf16: {dt}")
