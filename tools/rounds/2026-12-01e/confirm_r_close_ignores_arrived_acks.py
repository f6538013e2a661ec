"""One push receiver. send_async() publishes version 1; the receiver applies it and acks (on_apply runs after
its Ack went out). Without any other call, sender.close(): the future must be done and wait() return 1
(LIFE-8: acks that reached the sender's end of the channel, read or not)."""
import os
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
acked = threading.Event()
r = ws.Receiver(s.handle(0), on_apply=lambda v: v == 1 and acked.set())
connect_inproc(s, [r], timeout=10)
f = s.send_async({"w": torch.ones(4)}, timeout=5)
if not acked.wait(10):
    print("setup: the receiver did not apply version 1")
    os._exit(3)
time.sleep(0.3)  # the Ack is in the sender's socket buffer
s.close()
if not f.done():
    bug("after close() the future is not done")
try:
    v = f.wait(0)
except ws.ClosedError as e:
    bug(f"a version acked before close() raised ClosedError after it: {e}")
if v != 1:
    bug(f"wait() returned {v}")
r.close()
fine("a version acked before close() completes")
