"""One worker process holds two push receivers of one sender (ids 0 and 1). Its thread opens r1.reading() inside
r0.reading(), reads r1's weights, and while the blocks are open the trainer sends a new version to receiver 1.
r1's apply must wait for the block (CONS-2): the block sees one version of r1's weights throughout (CONS-1)."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(16)}
s = ws.Sender(w, 2)
r0 = ws.Receiver(s.handle(0))
r1 = ws.Receiver(s.handle(1))
seen = {}
try:
    connect_inproc(s, [r0, r1], timeout=20)
    with r0.reading(timeout=10):
        with r1.reading(timeout=10):
            seen["first"] = r1.weights["w"].sum().item()
            w["w"].fill_(3.0)
            fut = s.send_async(workers=[1], timeout=10)
            time.sleep(1.5)
            seen["last"] = r1.weights["w"].sum().item()
            seen["version_inside"] = r1.version
    got = fut.wait(timeout=10)
    after = r1.weights["w"].sum().item()
finally:
    s.close()
    r0.close()
    r1.close()
if seen["first"] != seen["last"]:
    bug(f"inside r1.reading() (opened within r0.reading()) r1's weights went from sum {seen['first']} to "
        f"{seen['last']} (version {seen['version_inside']}): r1's apply did not wait for the block (CONS-2, CONS-1)")
if after != 48.0 or got != 1:
    bug(f"after the blocks r1 holds sum {after}, send returned {got}")
fine(f"r1's apply waited for the block (sum {seen['first']} throughout), then applied version {got}")
