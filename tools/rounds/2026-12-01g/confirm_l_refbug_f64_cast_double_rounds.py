"""Possible REFERENCE bug (LAYOUT-3). A float64 trainer with a bf16 worker (`dtypes=torch.bfloat16`): LAYOUT-3 wants
"each version's bytes there are the weights rounded to it as a cast rounds (round to nearest, ties to even)". The
float64 value 1 + 2**-8 + 2**-30 lies just above the midpoint between the bf16 neighbours 1 and 1 + 2**-7, so round
to nearest gives 1 + 2**-7 (0x3F81). torch converts float64 to bfloat16 (and to float16) through float32, which
first rounds the value to exactly the midpoint, and then ties to even give 1.0 (0x3F80): the reference's
`_foreach_copy_` into the cast slot double-rounds. Exit 1 when the worker holds the double-rounded value.
(Arguable: if "as a cast rounds" means "as torch's cast rounds", the reference conforms; the parenthetical says
round to nearest, ties to even, of the weights.)"""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
x = 1 + 2**-8 + 2**-30  # exact in float64
want = 1 + 2**-7  # the bf16 value nearest to x
s = ws.Sender({"w": torch.tensor([x, 0.5], dtype=torch.float64)}, 1, dtypes=torch.bfloat16)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=15)
got = r.weights["w"][0].item()
bits = r.weights["w"].view(torch.int16)[0].item() & 0xFFFF
r.close()
s.close()
if got != want:
    bug(f"the bf16 worker holds {got!r} (0x{bits:04X}) for the float64 weight {x!r}; round to nearest gives "
        f"{want!r} (0x3F81): the cast went through float32 and rounded twice (LAYOUT-3)")
fine(f"{x!r} rounded to {got!r}")
