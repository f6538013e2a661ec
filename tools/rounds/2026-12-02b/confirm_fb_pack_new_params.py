"""The usual order: model, optimizer, then pack(model) and a Sender of the Packed. After one optimizer step, a
send must deliver the model's new values to the worker (API-8: optimizers built before keep working), and the
module must still hold its original parameter objects."""
import torch
from _confirm import bug, connect_inproc, fine, module
from torch import nn

ws = module()
torch.manual_seed(0)
model = nn.Linear(4, 3)
w0, b0 = model.weight, model.bias
optim = torch.optim.SGD(model.parameters(), lr=0.5)
packed = ws.pack(model)
s = ws.Sender(packed, 1)
r = ws.Receiver(s.handle(0), nn.Linear(4, 3))
connect_inproc(s, [r], timeout=20)
before = {k: v.detach().clone() for k, v in model.state_dict().items()}
model(torch.ones(2, 4)).pow(2).sum().backward()
optim.step()
s.send(timeout=10)
with r.reading(timeout=10):
    got = {k: v.clone() for k, v in r.weights.items()}
want = {"weight": w0.detach().clone(), "bias": b0.detach().clone()}  # what the optimizer's step made
same_obj = model.weight is w0 and model.bias is b0
for x in (s, r):
    x.close()
trained = all(torch.equal(got[k], want[k]) and not torch.equal(got[k], before[k]) for k in want)
if not trained or not same_obj:
    bug(f"after optim.step() and a send, the worker holds trained weights: {trained}; the module kept its "
        f"parameter objects: {same_obj}: an optimizer built before pack() no longer trains what is sent (API-8)")
fine("the optimizer built before pack() updated the packed buffer; the send delivered it")
