"""A zero-copy push receiver whose target is an nn.Module (its own Linear, parameters requiring grad as built).
After connect, and after a later version, each rebound parameter must not require grad (ZC-3)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
torch.manual_seed(0)
s = ws.Sender(torch.nn.Linear(4, 3), 1)
worker = torch.nn.Linear(4, 3)
r = ws.Receiver(s.handle(0), worker, zero_copy=True)
connect_inproc(s, [r], timeout=20)
at_connect = {n: p.requires_grad for n, p in worker.named_parameters()}
v = s.send({"weight": torch.ones(3, 4), "bias": torch.ones(3)}, timeout=10)
time.sleep(0.2)
after_send = {n: p.requires_grad for n, p in worker.named_parameters()}
same = bool(torch.equal(worker.weight.detach(), torch.ones(3, 4)))
s.close()
r.close()
if not same:
    raise SystemExit("the module does not show version 1: no verdict")
if any(at_connect.values()) or any(after_send.values()):
    bug(f"zero-copy module parameters rebound to the slot still require grad: at connect {at_connect}, after "
        f"version {v} {after_send} (ZC-3: handed out outside autograd)")
fine(f"rebound parameters do not require grad: {at_connect} {after_send}")
