"""A module with a non-persistent buffer as both the sender's weights and the receiver's target must connect."""
import torch
from _confirm import bug, connect_inproc, fine, module
from torch import nn

ws = module()


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.register_buffer("scale", torch.ones(2))
        self.register_buffer("mask_cache", torch.ones(8, 8), persistent=False)  # kept out of checkpoints


trainer, policy = Policy(), Policy()
with ws.Sender(trainer, 1) as s:
    rx = ws.Receiver(s.handle(0), policy, mode="pull")
    try:
        connect_inproc(s, [rx])
    except ws.WeightsMismatchError as e:
        bug(f"receiver.connect refused a target built like the trainer's module: {str(e)[:160]}")
    except ws.ReceiverError as e:
        bug(f"sender.connect: receiver refused a target built like the trainer's module: {e.details}")
    with torch.no_grad():
        trainer.lin.weight.fill_(3.0)
    f = s.send_async(timeout=10)
    if rx.poll(timeout=10) != f.version or f.wait(10) != 1 or float(policy.lin.weight[0, 0]) != 3.0:
        bug("version 1 did not reach the module target")
    rx.close()
fine("connected and applied into a module with a non-persistent buffer")
