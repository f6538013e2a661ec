"""A sender listening on an abstract name that holds a `%` (listen="unix:@ws-x%2541-PID", the name `ws-x%41-PID`):
a worker given `sender.url(0)` must reach that sender and connect (RDV-1)."""
import os

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
listen = f"unix:@ws-x%2541-{os.getpid()}"
s = ws.Sender({"w": torch.ones(4)}, 1, listen=listen)
url = s.url(0)
r = ws.Receiver(url)
out, t = in_thread(r.connect, 4)
err = None
try:
    s.connect(timeout=6, workers=[0])
except ws.WeightSyncError as e:
    err = e
t.join(10)
s.close()
r.close()
if err is not None or "error" in out:
    bug(f"a worker given url(0) = {url.split('?')[0]!r}... for listen={listen!r} did not join: "
        f"sender {type(err).__name__ if err else 'ok'}, receiver {type(out.get('error')).__name__}: "
        "the URL names another socket (RDV-1)")
fine(f"the URL {url.split('?')[0]!r} reaches the sender")
