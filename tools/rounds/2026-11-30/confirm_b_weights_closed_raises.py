import _confirm
import torch

ws = _confirm.module()

sender = ws.Sender({"w": torch.arange(4.0)}, 1)
r = ws.Receiver(sender.handle(0), mode="pull")
_confirm.connect_inproc(sender, [r])
r.close()
try:
    w = dict(r.weights)
except ws.ClosedError as e:
    sender.close()
    _confirm.bug(f"reading weights after close() raised ClosedError: {e}")
sender.close()
if not torch.equal(w["w"], torch.arange(4.0)):
    _confirm.bug(f"weights after close() are {w}")
_confirm.fine("weights readable after close(), holding version 0")
