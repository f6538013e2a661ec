"""A sender built from a mapping `model`; one send of other weights (a snapshot), then the model changes and
`send()` without weights must publish the model's values (API-2), not the snapshot's again."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
model = {"w": torch.zeros(8)}
s = ws.Sender(model, 1)
r = ws.Receiver(s.handle(0))
try:
    connect_inproc(s, [r], timeout=20)
    s.send({"w": torch.full((8,), 7.0)}, timeout=10)  # a one-off snapshot
    model["w"].fill_(3.0)
    v = s.send(timeout=10)
    got = r.weights["w"][0].item()
finally:
    s.close()
    r.close()
if got != 3.0:
    bug(f"send() without weights after send(snapshot) published {got} for version {v}, not the sender's own "
        "weights (3.0): it re-read the last weights passed instead of the object it was built from (API-2)")
fine("send() re-reads the object the sender was built from")
