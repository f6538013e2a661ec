"""send_async(timeout=1) then wait() (no timeout) on a receiver that acks after 2.5 s: wait() returns the version."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull")
    connect_inproc(s, [rx])
    f = s.send_async(timeout=1.0)  # a free slot is there at once
    t0 = time.monotonic()
    threading.Timer(2.5, lambda: rx.poll(10)).start()  # a slow apply
    out, t = in_thread(f.wait)  # no timeout: waits without bound
    t.join(20)
    took = time.monotonic() - t0
    rx.close()
print(out, f"{took:.1f}s")
if "error" in out:
    bug(f"future.wait() with no timeout raised {type(out['error']).__name__} after {took:.1f}s: the "
        "send_async timeout bounded the wait for acks (API-2)")
if out.get("result") != f.version:
    bug(f"wait() gave {out!r}")
fine("wait() without timeout waited for the slow ack")
