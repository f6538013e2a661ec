"""Listening sender: receiver 0 joins by URL and is live; the trainer drops it and restarts it by URL with
connect(workers=[0]); the new process's target does not match, so it answers Ready(error). connect() must
raise ReceiverError naming 0 (cause "error") at once, not wait for its timeout."""
import os
import threading
import time

import torch
from _confirm import bug, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1, listen=f"unix:@m-rejoin-{os.getpid()}")
url = s.url(0)
r = ws.Receiver(url)
t = threading.Thread(target=r.connect, args=(10,), daemon=True)
t.start()
s.connect(timeout=10)
t.join(10)
s.send(timeout=5)
s.drop(0)
bad = ws.Receiver(url, {"w": torch.zeros(5)})   # the restarted worker's target does not match
out = {}


def run():
    time.sleep(0.7)  # the trainer's connect(workers=[0]) is waiting for the rejoin by then
    try:
        bad.connect(10)
    except Exception as e:  # noqa: BLE001
        out["e"] = e


t2 = threading.Thread(target=run, daemon=True)
t2.start()
t0 = time.monotonic()
try:
    s.connect(timeout=6, workers=[0])
    bug("connect(workers=[0]) returned although the rejoined receiver refused its Init")
except ws.ReceiverError as e:
    el = time.monotonic() - t0
    if isinstance(e, ws.SyncTimeoutError) or e.causes != {0: "error"}:
        bug(f"connect() raised {type(e).__name__} with causes {e.causes} after {el:.1f}s")
    if el > 4.5:
        bug(f"connect() raised the refusal only after {el:.1f}s")
except ws.SyncTimeoutError as e:
    bug(f"connect() waited its whole timeout ({time.monotonic() - t0:.1f}s) and raised SyncTimeoutError "
        f"{e.workers} {e.causes} though receiver 0's new process answered Ready(error) "
        f"(its own connect() raised {type(out.get('e')).__name__})")
t2.join(5)
s.close()
fine(f"the rejoined receiver's refusal is raised at once ({el:.1f}s), as ReceiverError cause 'error'")
