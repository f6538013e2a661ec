"""The worker's model has the trainer's layers (same names, dtypes, shapes) registered in another order, and the
worker packs it (pack(), API-8) to use as its target. After connect and after a send its tensors must hold the
trainer's values, name by name (API-8, ACK-3)."""
import _confirm
import e_helpers as h
import torch
from torch import nn

ws = _confirm.module()


class Trainer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 4)


class Worker(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 4)  # same layers, registered in another order
        self.body = nn.Linear(8, 16)


torch.manual_seed(0)
trainer, worker = Trainer(), Worker()
packed = ws.pack(worker)
sender = ws.Sender(trainer, 1)
r = ws.Receiver(sender.handle(0), packed, mode="pull")
h.connect(ws, sender, [r])


def wrong():
    ref = trainer.state_dict()
    return [k for k, v in worker.state_dict().items() if not torch.equal(v, ref[k])]


bad0 = wrong()
with torch.no_grad():
    for p in trainer.parameters():
        p.mul_(2.0).add_(0.5)
fut = sender.send_async(timeout=10)
got = None
for _ in range(50):
    got = r.poll(timeout=0.2)
    if got is not None:
        break
v = fut.wait(10)
bad1 = wrong()
r.close()
sender.close()
if bad0 or bad1:
    _confirm.bug(f"acked ok (send returned {v}) but the packed target holds other arrays' bytes: at connect {bad0}, "
                 f"after version {got} {bad1}")
_confirm.fine("the packed target holds the trainer's values name by name")
