"""A zero-copy pull receiver: after poll() applied version v, `weights` must show v's bytes (ACK-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(4, 4), "b": torch.zeros(4)}
with ws.Sender(w, 1) as sender:
    r = ws.Receiver(sender.handle(0), mode="pull", zero_copy=True)
    connect_inproc(sender, [r], timeout=20)
    try:
        seen = []
        for v in (1, 2, 3):
            f = sender.send_async({k: torch.full_like(t, float(v)) for k, t in w.items()}, timeout=10)
            got = r.poll(10)
            f.wait(10)
            with r.reading(10):
                seen.append((got, float(r.weights["w"][0, 0]), float(r.weights["b"][0])))
    finally:
        r.close()
wrong = [s for s in seen if not (s[0] is not None and s[1] == s[0] and s[2] == s[0])]
if wrong:
    bug(f"after acking version v the zero-copy weights show other bytes: (version, w, b) = {seen}")
fine(f"weights followed each version: {seen}")
