"""Confirms o_plane_join_bound_by_lease: a real worker whose side of the data plane takes 2.5 s to start (a slow
resolver on its host), with lease=1 s and the default transfer_timeout (60 s). The worker heartbeats all along
(NET-4), so NET-5 gives it timeout_ms to set `joined`: it must join."""
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
from weightsync import netplane  # noqa: E402

_inbound_init = netplane.Inbound.__init__


def slow_side(self, *a, **k):
    time.sleep(2.5)  # the worker's host resolves its name slowly
    _inbound_init(self, *a, **k)


netplane.Inbound.__init__ = slow_side

s = ws.Sender({"w": torch.zeros(3)}, 1, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2)
r = ws.Receiver(s.url(0))
try:
    connect_inproc(s, [r], timeout=15)
    err = None
except Exception as e:  # noqa: BLE001
    err = f"{type(e).__name__}: {e}"
if err is not None:
    bug(f"a heartbeating worker whose data plane took 2.5 s to start was cut off (lease 1 s, transfer_timeout "
        f"60 s): {err[:220]} (NET-5)")
v = s.send({"w": torch.ones(3)}, timeout=10)
if v != 1 or r.version != 1:
    bug("joined, but the next version did not arrive")
s.close()
r.close()
fine("the worker joined after 2.5 s and took version 1")
