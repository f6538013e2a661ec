"""A worker casts its module target to float16 after connect: the next apply must fail (Ack(error)), not round."""
import torch
from _confirm import bug, connect_inproc, fine, module
from torch import nn

ws = module()
torch.manual_seed(0)
trainer = nn.Linear(4, 3)
policy = nn.Linear(4, 3)
with ws.Sender(trainer, 1) as s:
    rx = ws.Receiver(s.handle(0), policy, mode="push")
    connect_inproc(s, [rx])
    with rx.reading(timeout=5):
        policy.half()  # the worker switches to half precision for inference
    with torch.no_grad():
        trainer.weight.fill_(0.1)  # not representable in float16
    try:
        v = s.send(timeout=10)
    except ws.ReceiverError as e:
        rx.close()
        fine(f"the send failed naming receiver {e.workers}: the target's dtype no longer matches")
    except ws.WeightSyncError as e:
        rx.close()
        bug(f"send raised {type(e).__name__}, not ReceiverError: {e}")
    with rx.reading(timeout=5):
        got, dt = float(policy.weight[0, 0]), policy.weight.dtype
    rx.close()
    bug(f"send returned {v} (acked ok) though the target is {dt}: it holds {got!r}, the trainer published 0.1 (float32)")
