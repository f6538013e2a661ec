import time

import _confirm
import torch

ws = _confirm.module()

sender = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(sender.handle(0), mode="push")
_confirm.connect_inproc(sender, [r])
with r.reading():
    fut = sender.send_async({"w": torch.ones(4)})
    time.sleep(0.8)  # the push thread now waits for this block to end
    try:
        with r.reading(timeout=1.5):
            inner = r.weights["w"].clone()
    except ws.SyncTimeoutError:
        _confirm.bug("a nested reading() waited for the pending apply and timed out (CONS-2: nested blocks never wait)")
    if not torch.equal(inner, torch.zeros(4)):
        _confirm.bug("weights changed inside reading()")
v = fut.wait(10)
sender.close(); r.close()
_confirm.fine(f"nested reading() entered at once while an apply waited; version {v} applied after")
