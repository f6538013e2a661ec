"""A packed module as the sender's weights, one copying receiver. The trainer keeps `best = model.state_dict()`
(views of the packed buffer), sends (the new views are seen), then replaces a parameter's `.data` and sends again:
that send must raise WeightsMismatchError and publish nothing (API-8, BAD-2); it must not deliver stale bytes."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
packed = ws.pack(model)
s = ws.Sender(packed, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
best = model.state_dict()  # views of the buffer, kept (a checkpoint of "the best so far")
with torch.no_grad():
    model[0].bias.add_(1.0)
v1 = s.send(timeout=10)
model[1].weight.data = torch.full((2, 4), 7.0)  # re-homed: no longer in the buffer
try:
    v2 = s.send(timeout=10)
except ws.WeightsMismatchError as e:
    ver = s.version
    got = r.weights["1.weight"].clone()
    s.close()
    r.close()
    if ver != v1:
        bug(f"the refused send consumed a version ({v1} -> {ver})")
    fine(f"a re-homed packed tensor is refused after kept views were seen: {str(e)[:80]}")
got = r.weights["1.weight"].clone()
s.close()
r.close()
bug(f"send after `model[1].weight.data = ...` published version {v2}; the receiver holds 1.weight "
    f"{got[0].tolist()} while the module holds 7.0 everywhere: the packed check missed the re-homed tensor "
    f"because views kept since an earlier send raised the reference count (API-8, BAD-2)")
