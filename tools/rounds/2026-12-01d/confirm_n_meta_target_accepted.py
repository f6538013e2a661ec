"""A worker whose module target is on the meta device (built under torch.device("meta"), never
materialised) must be refused at connect (INIT-3: device differs), not connected and acked."""
import torch
from _confirm import bug, connect_inproc, fine, module
from torch import nn

ws = module()
torch.manual_seed(0)
trainer = nn.Linear(3, 4)
with ws.Sender(trainer, 1) as sender:
    with torch.device("meta"):
        worker = nn.Linear(3, 4)
    r = ws.Receiver(sender.handle(0), worker, mode="pull")
    try:
        connect_inproc(sender, [r], timeout=20)
    except ws.WeightsMismatchError as e:
        r.close()
        fine(f"meta target refused at connect: {str(e)[:120]}")
    except ws.ReceiverError as e:
        r.close()
        fine(f"meta target refused at connect: {type(e).__name__}: {str(e)[:120]}")
    try:
        devs = {str(t.device) for t in r.weights.values()}
        r.close()
    except Exception:  # noqa: BLE001
        devs = "?"
    bug(f"a meta-device target was accepted: connect returned version {r.version}, weights on {devs}")
