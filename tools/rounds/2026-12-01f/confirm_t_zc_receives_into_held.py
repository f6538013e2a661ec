"""A zero-copy pull worker on TCP holds version 0 (w = 0); the trainer sends version 1 (w = 1) and the worker does
not poll: its weights must stay w = 0 until it polls (CONS-3, ACK-3), then show w = 1."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
w = {"w": torch.zeros(256)}
s = ws.Sender(w, 1, listen="tcp://127.0.0.1:0")
r = ws.Receiver(s.url(0), mode="pull", zero_copy=True)
out, t = in_thread(r.connect, 20)
s.connect(timeout=20)
t.join(20)
if "error" in out:
    bug(f"connect failed: {out['error']!r}")
try:
    before = float(r.weights["w"][0])
    w["w"].fill_(1.0)
    f = s.send_async(timeout=10)
    time.sleep(1.0)  # the transfer lands in the worker's data plane; no poll()
    with r.reading():
        between = (r.version, float(r.weights["w"][0]), float(r.weights["w"][-1]))
    got = r.poll(5)
    f.wait(5)
    after = (r.version, float(r.weights["w"][0]))
finally:
    r.close()
    s.close()
if before != 0.0 or between != (0, 0.0, 0.0):
    bug(f"without a poll(), a zero-copy TCP worker's weights changed: version {between[0]} reads w = "
        f"{between[1]}..{between[2]} (version 0 is w = 0)")
if after != (1, 1.0):
    bug(f"after poll() -> {got}, the worker reads {after}")
fine(f"weights held still until poll(); then {after}")
