"""A worker joins by a unix:PATH URL before the trainer's socket is at PATH (the file is moved away for 1.5 s, as
when the worker starts first). RDV-6: it tries again until its timeout, so once the socket is there it joins and
connect() returns the Init's version."""
import os
import tempfile
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
d = tempfile.mkdtemp(prefix="wsb-")
path = os.path.join(d, "trainer.sock")
s = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:{path}")
url = s.url(0)
os.rename(path, path + ".away")  # nobody listens at PATH yet
r = ws.Receiver(url)
out, t = in_thread(r.connect, 12)
time.sleep(1.5)
early = dict(out)
os.rename(path + ".away", path)
try:
    if "error" not in out:
        s.connect(timeout=12)
except Exception as e:  # noqa: BLE001
    out.setdefault("sender", e)
t.join(12)
r.close()
s.close()
for p in (path, path + ".away"):
    if os.path.lexists(p):
        os.unlink(p)
os.rmdir(d)
if "error" in out:
    bug(f"the worker gave up while nothing was at the path yet: connect() raised {out['error']!r} "
        f"(after 1.5 s: {early.get('error')!r})"[:400])
if out.get("result") != 0:
    raise SystemExit(f"unexpected: {out}")
fine("the joiner waited for the path to appear and connected at version 0")
