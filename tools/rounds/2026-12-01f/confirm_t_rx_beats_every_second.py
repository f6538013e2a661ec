"""A TCP sender with a short lease (0.6 s, heartbeat 0.1 s): an idle pull worker must keep its lease by its own
Heartbeats (at most a fifth of the lease apart, NET-4), so after 2.5 s of no sends it is still live and the next
send reaches it."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(64)}, 1, listen="tcp://127.0.0.1:0", lease=0.6, heartbeat=0.1)
r = ws.Receiver(s.url(0), mode="pull")
out, t = in_thread(r.connect, 20)
s.connect(timeout=20)
t.join(20)
if "error" in out:
    bug(f"connect failed: {out['error']!r}")
time.sleep(2.5)  # nothing sent: only Heartbeats keep either side's lease
stopped = r.stopped
err = None
try:
    f = s.send_async(timeout=10)
    got = r.poll(5)
    f.wait(5)
except Exception as e:  # noqa: BLE001
    err = e
r.close()
s.close()
if err is not None:
    bug(f"an idle worker under a 0.6 s lease lost it (receiver stopped: {stopped}): "
        f"{type(err).__name__}: {err}"[:400])
fine(f"the idle worker kept its 0.6 s lease and applied version {got}")
