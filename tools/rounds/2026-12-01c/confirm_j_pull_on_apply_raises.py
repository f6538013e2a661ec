"""A pull receiver's on_apply raising for a version after the Init: poll() must still return that version."""
import logging

import torch
from _confirm import bug, connect_inproc, fine, module

logging.getLogger("weightsync").setLevel(logging.CRITICAL)
ws = module()
calls = []


def on_apply(v):
    calls.append(v)
    if v >= 1:
        raise ConnectionError("metrics server unreachable")


w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull", on_apply=on_apply)
    connect_inproc(s, [rx])
    w["w"].fill_(5.0)
    f = s.send_async(timeout=10)
    try:
        got = rx.poll(timeout=10)
    except Exception as e:  # noqa: BLE001
        try:
            acked = f.wait(10)
        except ws.WeightSyncError as e2:
            acked = repr(e2)
        rx.close()
        bug(f"poll() raised on_apply's {type(e).__name__} ({e}); the version was applied and acked ({acked})")
    if got != f.version or f.wait(10) != f.version or calls != [0, 1]:
        bug(f"poll() returned {got}, calls {calls}")
    rx.close()
fine("the hook's exception was logged; poll() returned the version")
