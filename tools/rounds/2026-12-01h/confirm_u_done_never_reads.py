"""One push receiver in this process (no listen=: no helper thread). send_async(), then only done() is called:
API-2 wants done() true within the reaction bound (10 s) of the ack arriving, with no other call made."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0))
connect_inproc(s, [r], timeout=20)
f = s.send_async({"w": torch.ones(8)}, timeout=10)
t0 = time.monotonic()
while time.monotonic() - t0 < 8:
    if f.done():
        break
    time.sleep(0.05)
took = time.monotonic() - t0
held = r.version
is_done = f.done()
s.close()
r.close()
if held != f.version:
    raise SystemExit(f"the receiver did not apply version {f.version} (holds {held}): no verdict")
if not is_done:
    bug(f"the receiver applied and acked version {f.version}, but future.done() stayed False for {took:.1f} s "
        "with no other call on the sender: done() does not read the answers that arrived (API-2)")
fine(f"done() turned true {took:.2f} s after send_async with no other call")
