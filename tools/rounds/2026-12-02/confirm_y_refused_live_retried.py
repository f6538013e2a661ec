"""A listening sender; worker 0 joins by URL and is live. A second process (here a second Receiver in this
process) joins with the same URL: the sender refuses it ("receiver 0 is live", RDV-5), and its connect(timeout=3)
must raise RefusedError (RDV-4, RDV-7), not retry until its timeout."""
import os
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:@ws-y-refused-{os.getpid()}")
url = s.url(0)
r0 = ws.Receiver(url)
out0, t0 = in_thread(r0.connect, 10)
s.connect(timeout=10)
t0.join(10)
if "error" in out0:
    raise SystemExit(f"worker 0 did not connect: {out0!r}")
stray = ws.Receiver(url)
start = time.monotonic()
out, t = in_thread(stray.connect, 3)
t.join(10)
took = time.monotonic() - start
stray.close()
r0.close()
s.close()
err = out.get("error")
if isinstance(err, ws.RefusedError):
    fine(f"the second join raised RefusedError after {took:.2f} s: {str(err)[:90]}")
bug(f"the second join for live receiver 0 gave {out!r} after {took:.1f} s instead of RefusedError")
