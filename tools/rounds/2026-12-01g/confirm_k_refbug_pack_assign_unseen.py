"""REFERENCE BUG (exit 1 on weightsync). A packed module as the sender's weights, one copying receiver. The trainer
reloads its weights with `model.load_state_dict(sd, assign=True)` (new parameter objects, not in the buffer). The
guide docs/guides/packed.md lists `load_state_dict(..., assign=True)` among what breaks a Packed: "The next send that
uses the Packed raises WeightsMismatchError naming the tensor"; API-8: "A send MUST deliver exactly what it would
deliver for the unpacked weights" (the module's new values). The reference's check looks only at the tensor objects
it kept at packing, which still view the buffer, so the send goes through and delivers the old values."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
model = torch.nn.Linear(4, 2)
packed = ws.pack(model)
s = ws.Sender(packed, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
s.send(timeout=10)
model.load_state_dict({"weight": torch.full((2, 4), 5.0), "bias": torch.full((2,), 5.0)}, assign=True)
try:
    v = s.send(timeout=10)
except ws.WeightsMismatchError as e:
    s.close()
    r.close()
    fine(f"the reloaded module is refused: {str(e)[:80]}")
got = r.weights["bias"].clone()
s.close()
r.close()
if torch.equal(got, torch.full((2,), 5.0)):
    fine("the send delivered the reloaded values")
bug(f"after load_state_dict(assign=True) the send published version {v} and the receiver holds bias {got.tolist()}, "
    "not the module's 5.0: neither refused (docs/guides/packed.md) nor what the unpacked weights deliver (API-8)")
