"""Packed weights of small tensors (16 and 4 floats: the bf16 slot is as large as the fp32 buffer, 64-byte padding)
as the sender's weights, `dtypes=torch.bfloat16`, one copying receiver with target=None. After an in-place update
and a send, the receiver must hold the bf16 rounding of the trainer's values (LAYOUT-3, API-8)."""
import threading

import torch
from _confirm import bug, fine, module

ws = module()
w = {"a": torch.linspace(-2, 2, 16), "b": torch.arange(4, dtype=torch.float32)}
packed = ws.pack(w)
s = ws.Sender(packed, 1, dtypes=torch.bfloat16)
r = ws.Receiver(s.handle(0))
t = threading.Thread(target=r.connect, args=(20,), daemon=True)
t.start()
s.connect(timeout=20)
t.join(20)
with torch.no_grad():
    packed["a"].mul_(1.5)
    packed["b"].add_(1)
v = s.send(timeout=10)
with r.reading(timeout=10):
    got = {k: x.clone() for k, x in r.weights.items()}
s.close()
r.close()
for k in ("a", "b"):
    want = packed[k].detach().to(torch.bfloat16)
    if got[k].dtype != torch.bfloat16 or not torch.equal(got[k], want):
        bug(f"version {v}: the bf16 worker holds {k} = {got[k][:4].tolist()}..., expected {want[:4].tolist()}...: "
            "the packed buffer was copied byte for byte into a cast slot of the same size (LAYOUT-3, API-8)")
fine("packed weights reach bf16 slots converted, array by array")
