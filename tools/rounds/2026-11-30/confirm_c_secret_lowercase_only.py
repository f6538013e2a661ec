"""RDV-1: a receiver URL's secret is read in either case; an upper-cased secret joins like the original."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _confirm

ws = _confirm.module()
name = f"ws-c-upper-{os.getpid()}"
sender = ws.Sender({"w": torch.arange(4.0)}, 1, listen=f"unix:@{name}")
try:
    url = sender.url(0)
    head, q = url.split("?", 1)
    params = dict(p.split("=", 1) for p in q.split("&"))
    assert params["secret"] == params["secret"].lower()
    upper = f"{head}?receiver={params['receiver']}&secret={params['secret'].upper()}"
    try:
        r = ws.Receiver(upper)
    except ValueError as e:
        _confirm.bug(f"an upper-case secret was refused at Receiver(url): {e}")
    out, t = _confirm.in_thread(r.connect, 20)
    sender.connect(timeout=20)
    t.join(20)
    if "error" in out:
        _confirm.bug(f"the upper-case URL did not join: {out['error']!r}")
    if not torch.equal(r.weights["w"], torch.arange(4.0)):
        _confirm.bug("joined but wrong weights")
    r.close()
finally:
    sender.close()
_confirm.fine("an upper-case secret joins")
