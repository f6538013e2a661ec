"""WIRE-2: a receiver that joined by URL takes an Init frame above 64 KiB (here about 150 KiB, 1,200 tensors)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _confirm

ws = _confirm.module()
weights = {f"encoder.layers.{i:05d}.attention.out_proj.bias": torch.full((1,), float(i)) for i in range(1200)}
name = f"ws-c-bigi-{os.getpid()}"
sender = ws.Sender(weights, 1, listen=f"unix:@{name}")
try:
    r = ws.Receiver(sender.url(0))
    out, t = _confirm.in_thread(r.connect, 20)
    err = None
    try:
        sender.connect(timeout=20)
    except Exception as e:  # noqa: BLE001
        err = e
    t.join(20)
    if "error" in out:
        _confirm.bug(f"the receiver refused a legal Init above 64 KiB: {out['error']!r}"[:300])
    if err is not None:
        _confirm.bug(f"sender.connect raised {err!r}"[:300])
    if float(r.weights["encoder.layers.01199.attention.out_proj.bias"]) != 1199.0:
        _confirm.bug("wrong weights")
    r.close()
finally:
    sender.close()
_confirm.fine("a 1,200-tensor Init joined by URL")
