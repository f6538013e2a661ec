"""A pull worker in the middle of an episode: the trainer publishes version 1 (send_async) without the worker
polling. `receiver.stopped` must stay false (the receiver is live, SM-R-8), and the next poll() applies version 1
(API-3), which completes the send."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
try:
    connect_inproc(s, [r], timeout=20)
    before = r.stopped
    fut = s.send_async({"w": torch.ones(8)}, timeout=10)
    time.sleep(0.5)  # the Receive waits unread in the channel
    during = r.stopped
    got = r.poll(timeout=5)
    try:
        acked = fut.wait(timeout=3)
    except ws.WeightSyncError as e:
        acked = f"{type(e).__name__}"
finally:
    s.close()
    r.close()
if before or during:
    bug(f"a live pull receiver with a Receive unread in its channel reads stopped={during} (before the send: "
        f"{before}); poll() then returned {got} and the send's wait gave {acked} (SM-R-8)")
if got != 1 or acked != 1:
    bug(f"poll() returned {got}, the send's wait gave {acked}")
fine("stopped stayed false while a version waited; poll() applied it")
