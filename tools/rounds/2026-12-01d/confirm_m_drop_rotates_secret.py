"""Listening sender: receiver 0 joins by URL, the trainer drops it, and a restarted process joins with the same
URL (RDV-5: a restart is a new process given the same URL); connect(workers=[0]) must bring it back."""
import os
import threading

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, listen=f"unix:@m-rot-{os.getpid()}")
url0 = s.url(0)
r = ws.Receiver(url0)
t = threading.Thread(target=r.connect, args=(10,), daemon=True)
t.start()
s.connect(timeout=10, workers=[0])
t.join(10)
s.send(workers=[0], timeout=5)
s.drop(0)
url_after = s.url(0)
again = ws.Receiver(url0)           # the restarted worker, given the URL it was started with
out = {}


def run():
    try:
        out["v"] = again.connect(6)
    except Exception as e:  # noqa: BLE001
        out["e"] = e


t2 = threading.Thread(target=run, daemon=True)
t2.start()
try:
    s.connect(timeout=6, workers=[0])
except Exception as e:  # noqa: BLE001
    t2.join(8)
    bug(f"restart with the same URL failed: sender.connect raised {type(e).__name__}; the worker's connect "
        f"raised {type(out.get('e')).__name__}: {out.get('e')}; url(0) changed after drop: {url_after != url0}")
t2.join(8)
if "e" in out:
    bug(f"the restarted worker's connect raised {type(out['e']).__name__}: {out['e']}")
if url_after != url0:
    bug("url(0) changed after drop(0): the secret is not fixed for the sender's life")
if s.send(workers=[0], timeout=5) != 2:
    bug("send after the restart did not return version 2")
s.close()
fine("a dropped receiver restarts with the same URL")
