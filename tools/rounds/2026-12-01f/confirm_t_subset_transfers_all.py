"""Two TCP pull workers; version 1 (w=1) goes to worker 0 only, version 2 (w=2) to both. Worker 1 must apply version 2
with w == 2 (NET-2: a subset send transfers to its targets only; ACK-3)."""
import torch
from _confirm import bug, fine, in_thread, module

ws = module()
w = {"w": torch.zeros(256)}
s = ws.Sender(w, 2, listen="tcp://127.0.0.1:0")
rs = [ws.Receiver(s.url(i), mode="pull") for i in range(2)]
outs = [in_thread(r.connect, 20) for r in rs]
s.connect(timeout=20)
for out, t in outs:
    t.join(20)
    if "error" in out:
        bug(f"connect failed: {out['error']!r}")
seen = []
try:
    w["w"].fill_(1.0)
    f = s.send_async(workers=[0], timeout=10)
    rs[0].poll(5)
    f.wait(5)
    w["w"].fill_(2.0)
    f = s.send_async(timeout=10)
    got = [r.poll(5) for r in rs]
    f.wait(5)
    seen = [(g, float(r.weights["w"][0]), float(r.weights["w"][-1])) for g, r in zip(got, rs)]
finally:
    for r in rs:
        r.close()
    s.close()
for i, (g, a, b) in enumerate(seen):
    if g != 2 or a != 2.0 or b != 2.0:
        bug(f"worker {i} acked version {g} but holds w = {a}..{b} (version 2 is w = 2)")
fine(f"both workers hold version 2 with w = 2: {seen}")
