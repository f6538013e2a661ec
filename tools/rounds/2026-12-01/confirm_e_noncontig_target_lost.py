"""A worker's model runs channels_last (its conv weight is dense but not C-contiguous). After connect and after
a send, the worker's module must hold the trainer's values (ACK-3, INIT-4)."""
import _confirm
import e_helpers as h
import torch
from torch import nn

ws = _confirm.module()
torch.manual_seed(0)
trainer = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 1))
worker = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 1)).to(memory_format=torch.channels_last)
assert not worker[0].weight.is_contiguous()
sender = ws.Sender(trainer, 1)
r = ws.Receiver(sender.handle(0), worker, mode="pull")
h.connect(ws, sender, [r])
bad0 = [k for k, v in worker.state_dict().items() if not torch.equal(v, trainer.state_dict()[k])]
with torch.no_grad():
    for p in trainer.parameters():
        p.add_(1.0)
fut = sender.send_async(timeout=10)
got = None
for _ in range(50):
    got = r.poll(timeout=0.2)
    if got is not None:
        break
v = fut.wait(10)
bad1 = [k for k, t in worker.state_dict().items() if not torch.equal(t, trainer.state_dict()[k])]
r.close()
sender.close()
if bad0 or bad1:
    _confirm.bug(f"receiver acked ok (version {got}, send returned {v}) but the channels_last module differs from "
                 f"the trainer's at connect in {bad0} and after the send in {bad1}")
_confirm.fine(f"the channels_last module holds version {got} exactly")
