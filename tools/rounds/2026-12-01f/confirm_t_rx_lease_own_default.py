"""A TCP sender made with lease=20, heartbeat=8 stays silent for up to 8 s between its Heartbeats; its worker must
wait the announced 20 s lease (NET-4), so after 6.5 s of no sends it is still live and the next send reaches it."""
import time

import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(64)}, 1, listen="tcp://127.0.0.1:0", lease=20.0, heartbeat=8.0)
r = ws.Receiver(s.url(0), mode="pull")
out, t = in_thread(r.connect, 20)
s.connect(timeout=20)
t.join(20)
if "error" in out:
    bug(f"connect failed: {out['error']!r}")
time.sleep(6.5)  # the sender says nothing for 8 s at a time; the lease it announced is 20 s
stopped = r.stopped
err = got = None
try:
    f = s.send_async(timeout=10)
    got = r.poll(5)
    f.wait(5)
except Exception as e:  # noqa: BLE001
    err = e
failure = None
if err is not None and stopped:
    try:
        r.poll(0)
    except Exception as e:  # noqa: BLE001
        failure = e
r.close()
s.close()
if stopped or err is not None:
    bug(f"the worker gave up on the sender within 6.5 s under a 20 s lease (stopped: {stopped}; poll: "
        f"{failure!r}; send: {type(err).__name__}: {err})"[:500])
fine(f"the worker waited out the sender's 8 s silences and applied version {got}")
