"""A module whose output layer shares the embedding's weight (weight tying): `pack(model)` must raise ValueError
before anything moves (API-8). If it packs, the tied weight is trained in place and sent: both names must then
arrive with the trainer's values, as unpacked weights would deliver them."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(8, 4)
        self.head = torch.nn.Linear(4, 8, bias=False)
        self.head.weight = self.emb.weight


model = Tied()
try:
    packed = ws.pack(model)
except ValueError as e:
    if not torch.equal(model.emb.weight.detach(), model.head.weight.detach()) or model.emb.weight is not model.head.weight:
        bug("pack() refused the tie but moved something first")
    fine(f"tied weights refused: {str(e)[:70]}")
s = ws.Sender(packed, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
with torch.no_grad():
    model.emb.weight.add_(10.0)
try:
    v = s.send(timeout=10)
except ws.WeightSyncError as e:
    s.close()
    r.close()
    bug(f"pack() took a tied module without ValueError; the first send then failed: {type(e).__name__}: {str(e)[:80]}")
got = {k: x.clone() for k, x in r.weights.items()}
s.close()
r.close()
want = model.emb.weight.detach()
bug(f"pack() took a tied module without ValueError (API-8); version {v} delivered emb.weight "
    f"{'equal' if torch.equal(got['emb.weight'], want) else 'STALE'} and head.weight "
    f"{'equal' if torch.equal(got['head.weight'], want) else 'STALE'} to the trainer's tied weight")
