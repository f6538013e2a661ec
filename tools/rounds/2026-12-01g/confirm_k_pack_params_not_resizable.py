"""A module with a frozen layer (requires_grad=False before pack), packed, as the sender's weights; one copying
receiver. The frozen weight is resized in place (`resize_`); the next send must raise WeightsMismatchError and
publish nothing (API-8, BAD-2)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
model[0].requires_grad_(False)  # a frozen backbone layer
packed = ws.pack(model)
s = ws.Sender(packed, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
v1 = s.send(timeout=10)
model[0].weight.resize_(2, 4)  # allowed: it does not require grad
try:
    v2 = s.send(timeout=10)
except ws.WeightsMismatchError as e:
    ver = s.version
    s.close()
    r.close()
    if ver != v1:
        bug(f"the refused send consumed a version ({v1} -> {ver})")
    fine(f"a resized frozen parameter is refused: {str(e)[:80]}")
shape = tuple(r.weights["0.weight"].shape)
s.close()
r.close()
bug(f"send after resizing the frozen parameter 0.weight to (2, 4) published version {v2} (the receiver holds it as "
    f"{shape}): the packed check does not watch parameters for resize_ (API-8, BAD-2)")
