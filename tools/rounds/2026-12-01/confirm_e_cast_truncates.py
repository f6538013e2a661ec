"""An fp32 trainer, a bf16 worker (Sender(dtypes=torch.bfloat16)). LAYOUT-3: the worker's weights are the
trainer's rounded as a cast rounds, i.e. exactly `w.to(torch.bfloat16)`, at connect and after a send."""
import _confirm
import e_helpers as h
import torch

ws = _confirm.module()
w0 = h.weights(0)
sender = ws.Sender(w0, 1, dtypes=torch.bfloat16)
target = {k: torch.zeros_like(v, dtype=torch.bfloat16 if v.is_floating_point() else v.dtype) for k, v in w0.items()}
r = ws.Receiver(sender.handle(0), target, mode="pull")
h.connect(ws, sender, [r])


def diff(w):
    out = {}
    for k, v in w.items():
        want = v.to(torch.bfloat16) if v.is_floating_point() else v
        n = int((target[k].view(-1) != want.view(-1)).sum())
        if n:
            out[k] = n
    return out


d0 = diff(w0)
w1 = h.weights(1)
fut = sender.send_async(w1, timeout=10)
got = None
for _ in range(50):
    got = r.poll(timeout=0.2)
    if got is not None:
        break
fut.wait(10)
d1 = diff(w1)
r.close()
sender.close()
if d0 or d1:
    _confirm.bug(f"bf16 worker's weights differ from w.to(bfloat16) (elements per entry): at connect {d0}, "
                 f"after version {got} {d1}")
_confirm.fine("the bf16 worker holds exactly w.to(torch.bfloat16)")
