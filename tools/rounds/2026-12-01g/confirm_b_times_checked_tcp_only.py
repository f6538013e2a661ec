"""API-10: lease, heartbeat and transfer_timeout are each a finite number > 0 with heartbeat < lease; anything else
raises ValueError from Sender(), whatever the sender listens on (here: handles only, and unix:@NAME)."""
import os

import torch
from _confirm import bug, fine, module

ws = module()
bad = [dict(lease=0.5, heartbeat=2.0), dict(lease=-1.0), dict(transfer_timeout=float("nan")), dict(heartbeat=0)]
accepted = []
for listen in (None, f"unix:@wsb-times-{os.getpid()}"):
    for kw in bad:
        try:
            s = ws.Sender({"w": torch.zeros(4)}, 1, listen=listen, **kw)
        except ValueError:
            continue
        s.close()
        accepted.append((listen, kw))
if accepted:
    bug(f"Sender() accepted {len(accepted)} of {2 * len(bad)} bad network times, e.g. {accepted[0]}")
fine("every bad lease/heartbeat/transfer_timeout raised ValueError")
