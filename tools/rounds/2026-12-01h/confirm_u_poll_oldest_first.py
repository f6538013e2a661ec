"""A pull receiver that has not polled while the trainer published versions 1 and 2 (send_async twice). Its next
poll() must apply the newest pending version, 2 (API-3), and that one Ack answers both sends (ACK-2)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=20)
f1 = s.send_async({"w": torch.full((8,), 1.0)}, timeout=10)
f2 = s.send_async({"w": torch.full((8,), 2.0)}, timeout=10)
time.sleep(0.5)  # both Receives are in the channel
got = r.poll(timeout=5)
held = float(r.weights["w"][0])
later = r.poll(timeout=0.5)
s.close()
r.close()
if got != f2.version:
    bug(f"with versions {f1.version} and {f2.version} pending, poll() applied version {got} (weights {held}), "
        f"not the newest; the next poll() applied {later} (API-3)")
fine(f"poll() applied the newest pending version {got} (weights {held}); the next poll() returned {later}")
