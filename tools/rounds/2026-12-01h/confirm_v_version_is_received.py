"""A push worker reads inside reading() while the trainer publishes version 1: the apply waits for the block (CONS-2).
Inside the block the worker's weights are version 0's, and `receiver.version` must say 0; after the block the apply
runs and it says 1 with version 1's values."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=15)
with r.reading(timeout=5):
    f = s.send_async({"w": torch.ones(4)}, timeout=5)
    time.sleep(0.6)  # the apply thread has read Receive(1) and waits for this block
    inside_v, inside_w = r.version, float(r.weights["w"][0])
f.wait(10)
with r.reading(timeout=5):
    after_v, after_w = r.version, float(r.weights["w"][0])
r.close()
s.close()
if inside_v != 0 and inside_w == 0.0:
    bug(f"inside reading() receiver.version is {inside_v} while the weights still hold version 0's values "
        f"({inside_w})")
if (inside_v, inside_w, after_v, after_w) != (0, 0.0, 1, 1.0):
    raise SystemExit(f"unexpected: {(inside_v, inside_w, after_v, after_w)}")
fine(f"inside the block: version {inside_v}, w={inside_w}; after the apply: version {after_v}, w={after_w}")
