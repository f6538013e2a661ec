"""A copying worker whose target is a mapping with the trainer's names in another (sorted) order, as a checkpoint
loader returns them. After connect() and after a send, each name must hold that array's bytes (INIT-4, ACK-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"z.bias": torch.full((4,), 1.0), "a.bias": torch.full((4,), 2.0)}
s = ws.Sender(w, 1)
target = {k: torch.zeros(4) for k in sorted(w)}  # a.bias first
r = ws.Receiver(s.handle(0), target)
try:
    connect_inproc(s, [r], timeout=20)
    at_init = {k: v[0].item() for k, v in target.items()}
    v = s.send({"z.bias": torch.full((4,), 5.0), "a.bias": torch.full((4,), 7.0)}, timeout=10)
    at_send = {k: t[0].item() for k, t in target.items()}
finally:
    s.close()
    r.close()
if at_init != {"z.bias": 1.0, "a.bias": 2.0} or at_send != {"z.bias": 5.0, "a.bias": 7.0}:
    bug(f"target after connect {at_init}, after send of version {v} {at_send}: arrays written under other names "
        "(INIT-4, ACK-3)")
fine(f"each name holds its own array: {at_init}, then {at_send}")
