"""Confirms o_lease_from_join: the receiver's data-plane store takes 1.5 s to start (as torch's TCPStore does when
its reverse DNS lookup is slow), with lease=0.5 s. NET-4 counts the lease from the Init, so the worker joins."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
from weightsync import netplane  # noqa: E402

_store_init = netplane.Store.__init__


def slow_store(self, *a, **k):
    time.sleep(1.5)  # a slow resolver on the trainer's host
    _store_init(self, *a, **k)


netplane.Store.__init__ = slow_store

s = ws.Sender({"w": torch.zeros(3)}, 1, listen="tcp://127.0.0.1:0", lease=0.5, heartbeat=0.1)
r = ws.Receiver(s.url(0))
try:
    connect_inproc(s, [r], timeout=10)
    err = None
except Exception as e:  # noqa: BLE001
    err = f"{type(e).__name__}: {e}"
try:
    ok = err is None and s.send({"w": torch.ones(3)}, timeout=5) == 1 and r.version == 1
finally:
    s.close()
    r.close()
if err is not None:
    bug(f"a worker whose Init waited 1.5 s for its store was named gone (lease 0.5 s): {err[:200]} (NET-4)")
if not ok:
    bug("the worker joined but a send to it failed")
fine("the lease counted from the Init: the worker joined and took version 1")
