import _confirm
import torch
from torch import nn

ws = _confirm.module()

src = nn.Linear(3, 2)
sender = ws.Sender(src, 1)
dst = nn.Linear(3, 2)
r = ws.Receiver(sender.handle(0), dst, mode="pull", zero_copy=True)
_confirm.connect_inproc(sender, [r])
dst.weight.data = torch.zeros(4, 4)  # the caller changes the target: it no longer matches the manifest
fut = sender.send_async(src)
try:
    got = r.poll(timeout=5)
except ws.ReceiverError as e:
    try:
        fut.wait(5)
    except ws.ReceiverError:
        pass
    if tuple(dst.weight.shape) != (4, 4):
        _confirm.bug("the poll failed, yet the mismatched tensor was rebound")
    sender.close(); r.close()
    _confirm.fine(f"poll() raised ReceiverError and left the target alone: {str(e)[:80]}")
try:
    fut.wait(5)
    acked = True
except ws.ReceiverError:
    acked = False
_confirm.bug(f"poll() returned {got} (send acked ok: {acked}); the reshaped parameter was rebound, now {tuple(dst.weight.shape)}")
