"""A send of a Mapping (an OrderedDict) whose value requires grad is rejected (BAD-3), nothing published."""
from collections import OrderedDict

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r])
try:
    v = s.send(OrderedDict(w=torch.ones(4, requires_grad=True)), timeout=5)
except ws.WeightsMismatchError:
    if s.version == 0:
        fine("rejected, nothing published")
    bug(f"rejected, but the version moved to {s.version}")
bug(f"a mapping value that requires grad was sent as version {v}")
