"""A sender built from a module, one copying receiver. `send()` after an in-place update publishes it; then the
trainer reloads its weights with `load_state_dict(..., assign=True)` (new parameter tensors, as a resume from a
checkpoint does) and calls `send()`: the receiver must hold the reloaded values (API-2: weights=None re-reads)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
model = torch.nn.Linear(4, 2)
with torch.no_grad():
    model.weight.zero_()
    model.bias.zero_()
s = ws.Sender(model, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
with torch.no_grad():
    model.bias.fill_(1.0)
s.send(timeout=10)
first = r.weights["bias"].clone()
model.load_state_dict({"weight": torch.full((2, 4), 5.0), "bias": torch.full((2,), 5.0)}, assign=True)
v = s.send(timeout=10)
second = {k: t.clone() for k, t in r.weights.items()}
s.close()
r.close()
if not torch.equal(first, torch.ones(2)):
    bug(f"the in-place update was not published: {first.tolist()}")
if not (torch.equal(second["bias"], torch.full((2,), 5.0)) and torch.equal(second["weight"], torch.full((2, 4), 5.0))):
    bug(f"version {v} (a send after load_state_dict(assign=True)) reached the receiver as bias "
        f"{second['bias'].tolist()}: the sender published its old tensors, not the reloaded ones (API-2)")
fine("send() re-reads the module's current tensors")
