"""A pull receiver that never polls after connect(): once the trainer's sender.close() (Stop, then end of
channel), `receiver.stopped` must turn true without a poll() (LIFE-7), well within the reaction bound."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=20)
if r.stopped:
    bug("a live pull receiver reads stopped before the sender closed")
s.close()
t0 = time.monotonic()
while not r.stopped and time.monotonic() - t0 < 6.0:
    time.sleep(0.02)
seen, el = r.stopped, time.monotonic() - t0
polled = r.poll(timeout=0)
after = r.stopped
r.close()
if not seen:
    bug(f"receiver.stopped stayed False for {el:.1f}s after sender.close() without a poll() (LIFE-7); "
        f"poll() then returned {polled} and stopped read {after}")
if polled is not None:
    bug(f"poll() after the sender closed returned {polled}")
fine(f"stopped turned true {el:.2f}s after sender.close(), without a poll()")
