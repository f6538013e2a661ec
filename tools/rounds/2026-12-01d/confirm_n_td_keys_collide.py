"""A TensorDict whose nested key ("a", "b") and key "a.b" flatten to one name must be refused with
WeightsMismatchError (BAD-1), not published with one of the two tensors left out."""
import torch
from _confirm import bug, connect_inproc, fine, module
from tensordict import TensorDict

ws = module()
td = TensorDict({"a": TensorDict({"b": torch.zeros(3)}, []), "a.b": torch.ones(3), "c": torch.ones(2)}, [])
try:
    sender = ws.Sender(td, 1)
except ws.WeightsMismatchError as e:
    fine(f"refused: {str(e)[:120]}")
with sender:
    r = ws.Receiver(sender.handle(0), mode="pull")
    connect_inproc(sender, [r], timeout=20)
    try:
        names = sorted(r.weights)
    finally:
        r.close()
bug(f"a TensorDict of 3 leaves, two of them flattening to 'a.b', was published as {names}")
