"""Receiver 0 refuses its Init (its target does not match): sender.connect raises ReceiverError. The trainer fixes
the worker and restarts it (LIFE-2): handle(0), a new Receiver, connect(workers=[0]); then a send reaches it."""
import threading

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
bad = ws.Receiver(s.handle(0), {"w": torch.zeros(5)})
out = {}


def run():
    try:
        bad.connect(10)
    except Exception as e:  # noqa: BLE001
        out["e"] = e


t = threading.Thread(target=run, daemon=True)
t.start()
try:
    s.connect(timeout=10)
    bug("connect() did not name the refusing receiver")
except ws.ReceiverError as e:
    assert e.workers == [0], e.workers
t.join(10)
try:
    h = s.handle(0)
except ws.LocalProtocolError as e:
    bug(f"handle(0) for a receiver that refused its Init (failed) raised LocalProtocolError: {e}")
good = ws.Receiver(h, {"w": torch.zeros(4)})
connect_inproc(s, [good], workers=[0], timeout=10)
if s.send(timeout=5) != 1:
    bug("the restarted receiver did not take version 1")
s.close()
fine("a receiver that refused its Init is restarted with a new handle")
