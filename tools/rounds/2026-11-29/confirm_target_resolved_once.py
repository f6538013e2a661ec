"""A worker replaces a tensor of its target after connect: the next apply answers Ack(error) (ACK-7)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4), "b": torch.zeros(2)}, 1)
target = {"w": torch.zeros(4), "b": torch.zeros(2)}
r = ws.Receiver(s.handle(0), target)  # push
connect_inproc(s, [r])
target["w"] = torch.zeros(3)  # replaced by one of another shape
try:
    v = s.send({"w": torch.ones(4), "b": torch.ones(2)}, timeout=10)
except ws.ReceiverError as e:
    fine(f"send failed naming {e.workers}")
bug(f"send returned {v}: the receiver acked ok although target['w'] is now {list(target['w'].shape)} "
    f"(holds {target['w'].tolist()})")
