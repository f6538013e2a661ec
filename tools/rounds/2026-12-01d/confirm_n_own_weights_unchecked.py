"""After `model.half()` (same Parameter objects, new dtype), `sender.send()` of the sender's own module
must raise WeightsMismatchError (BAD-2) and publish nothing, not convert and publish."""
import torch
from _confirm import bug, connect_inproc, fine, module
from torch import nn

ws = module()
torch.manual_seed(0)
model = nn.Linear(3, 4)
with ws.Sender(model, 1) as sender:
    r = ws.Receiver(sender.handle(0), mode="pull")
    connect_inproc(sender, [r], timeout=20)
    try:
        model.half()
        try:
            f = sender.send_async(timeout=10)
        except ws.WeightsMismatchError as e:
            fine(f"refused, version {sender.version}: {str(e)[:100]}")
        got = r.poll(10)
        f.wait(10)
        dt = {k: str(v.dtype) for k, v in r.weights.items()}
    finally:
        r.close()
bug(f"after model.half() send() published version {f.version} (applied {got}); the worker holds {dt}")
