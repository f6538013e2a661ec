"""A push worker reads its weights inside a `reading()` block that lasts 2 s (an inference batch). A send that comes
meanwhile must not return before the worker applied it (ACK-4): it returns only once the block ended and the
worker's weights are the new version."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=10)
inside, entered = threading.Event(), threading.Event()


def infer():
    with r.reading(timeout=5):
        inside.set()
        entered.set()
        time.sleep(2.0)
        inside.clear()


_, rt = in_thread(infer)
entered.wait(5)
got = s.send({"w": torch.ones(4)}, timeout=10)
still_inside = inside.is_set()
seen = r.version
rt.join(5)
time.sleep(0.2)
after = r.weights["w"][0].item()
r.close()
s.close()
if still_inside:
    bug(f"send() returned version {got} while the worker was still inside reading() on version {seen}: the Ack "
        "came before the apply")
if seen == got and after == 1.0:
    fine(f"send() returned {got} once the worker applied it")
raise SystemExit(f"unexpected: got={got} seen={seen} after={after}")
