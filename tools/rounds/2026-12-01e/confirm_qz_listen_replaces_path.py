"""Trainer A listens on a filesystem socket; trainer B is made with the same path. B must refuse the path (RDV-8),
and a worker of A restarting with A's URL must still join A (RDV-5). A plain file at a path is not taken over
either."""
import os
import shutil
import tempfile
import threading

import torch
from _confirm import bug, fine, module

ws = module()
d = tempfile.mkdtemp(prefix="qz-", dir="/tmp")
path = os.path.join(d, "trainer.sock")
a = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:{path}")
url = a.url(0)
try:
    b = ws.Sender({"w": torch.ones(4)}, 1, listen=f"unix:{path}")
except (OSError, ValueError, ws.WeightSyncError) as e:
    b = None
    print("B refused the path:", type(e).__name__, e)
out = {}


def worker():
    r = ws.Receiver(url)
    try:
        out["v"] = r.connect(timeout=5)
    except Exception as e:  # noqa: BLE001
        out["e"] = e
    finally:
        r.close()


t = threading.Thread(target=worker, daemon=True)
t.start()
try:
    a.connect(timeout=5, workers=[0])
    joined = True
except ws.WeightSyncError as e:
    joined = False
    print("A's connect:", type(e).__name__, e)
t.join(8)
plain = os.path.join(d, "notes.txt")
with open(plain, "w") as fh:
    fh.write("keep me")
try:
    c = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:{plain}")
    c.close()
    c_took = True
except (OSError, ValueError, ws.WeightSyncError):
    c_took = False
kept = os.path.exists(plain) and open(plain).read() == "keep me"
a.close()
if b is not None:
    b.close()
shutil.rmtree(d, ignore_errors=True)
if b is not None:
    why = out.get("e")
    bug(f"a second sender took over the path of a running one (RDV-8); A's worker restarting with its URL then "
        f"{'joined' if joined else 'failed: ' + type(why).__name__ + ': ' + str(why)[:120]}")
if c_took or not kept:
    bug(f"a sender took over a plain file's path (listening: {c_took}; the file kept: {kept}) (RDV-8)")
if not joined or "e" in out:
    bug(f"A's worker could not join with A's URL: {out.get('e')!r}")
fine("a sender refuses a path that exists, and the first trainer keeps its workers")
