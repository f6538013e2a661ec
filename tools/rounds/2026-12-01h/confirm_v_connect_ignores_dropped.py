"""Worker 0 connects; worker 1's process never calls connect() (stuck at start), so the trainer's connect(timeout=10)
waits for it. A supervisor thread drops worker 1. INIT-5: connect() raises ReceiverDiedError naming 1 (the version in
Init), within the reaction bound; it does not return as if all were connected."""
import os
import threading
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0))
hung = os.dup(s.handle(1).fileno())  # worker 1's end, held by a process that hangs before its connect()
o0, t0 = in_thread(r0.connect, 10)
threading.Timer(0.8, s.drop, args=(1,), kwargs={"timeout": 5}).start()
start = time.monotonic()
out, t = in_thread(s.connect, 10)
t.join(15)
took = time.monotonic() - start
t0.join(10)
r0.close()
s.close()
os.close(hung)
err = out.get("error")
if "result" in out:
    bug(f"connect() returned normally {took:.1f} s in, although worker 1 never connected and was dropped")
if isinstance(err, ws.ReceiverDiedError) and err.workers == [1] and took < 8:
    fine(f"connect() raised ReceiverDiedError naming [1] after {took:.1f} s (version {err.version})")
raise SystemExit(f"unexpected: {out!r} after {took:.1f} s")
