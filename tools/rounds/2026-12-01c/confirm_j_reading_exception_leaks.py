"""A reading() block whose body raises (caught by the worker) must not hold back later applies."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="push")
    connect_inproc(s, [rx])
    try:
        with rx.reading(timeout=5):
            raise ValueError("inference failed on a bad observation")
    except ValueError:
        pass  # the worker logs it and goes on
    w["w"].fill_(2.0)
    try:
        v = s.send(timeout=6)
    except ws.SyncTimeoutError:
        bug("after a reading() block raised, the push receiver never applied version 1 (send timed out)")
    with rx.reading(timeout=5):
        val = float(rx.weights["w"][0])
    if rx.version != v or val != 2.0:
        bug(f"receiver holds version {rx.version}, value {val}, after send returned {v}")
    rx.close()
fine("the block's exception left the read side; version 1 was applied")
