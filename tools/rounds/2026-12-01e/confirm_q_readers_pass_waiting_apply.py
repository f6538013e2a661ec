"""Push receiver with two reader threads whose reading() blocks overlap (each 0.3 s long, the second entering while
the first is inside, and so on). A send must still be applied within a few seconds: once the apply waits, new
blocks wait for it (CONS-2)."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=10)
stop = threading.Event()
errors = []


def reader(offset):
    time.sleep(offset)
    while not stop.is_set():
        try:
            with r.reading(timeout=10):
                time.sleep(0.3)
        except ws.WeightSyncError as e:  # noqa: PERF203
            errors.append(e)
            return


threads = [threading.Thread(target=reader, args=(o,), daemon=True) for o in (0.0, 0.15)]
for th in threads:
    th.start()
time.sleep(0.5)                          # the blocks overlap from now on
t0 = time.monotonic()
try:
    v = s.send({"w": torch.ones(4)}, timeout=4)
except ws.SyncTimeoutError:
    stop.set()
    bug(f"the receiver did not apply a version in {time.monotonic() - t0:.1f}s while readers' blocks overlapped: "
        "new reading() blocks went past the waiting apply")
el = time.monotonic() - t0
stop.set()
for th in threads:
    th.join(5)
s.close()
r.close()
if errors:
    bug(f"a reader got {errors[0]!r}")
fine(f"version {v} applied after {el:.2f}s between overlapping reading() blocks")
