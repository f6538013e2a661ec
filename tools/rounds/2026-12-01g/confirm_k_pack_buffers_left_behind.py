"""A packed model with BatchNorm as the sender's weights, one copying receiver (target=None). A training step in
train mode updates the BatchNorm's running statistics in place (and an optimizer step the parameters); the next
send must deliver the module's current buffers and parameters (API-8: in-place updates write into the buffer)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
packed = ws.pack(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
s = ws.Sender(packed, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
model.train()
for _ in range(3):
    loss = model(torch.randn(16, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    v = s.send(timeout=10)
got = {k: x.clone() for k, x in r.weights.items()}
s.close()
r.close()
stale = [k for k, t in model.state_dict().items() if not torch.equal(got[k], t)]
if stale:
    bug(f"after {v} versions the receiver holds stale {stale}: e.g. 1.running_mean "
        f"{got['1.running_mean'].tolist()} vs the trainer's {model[1].running_mean.tolist()} (API-8)")
fine("parameters and buffers of the packed module reach the receiver")
