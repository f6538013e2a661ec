"""on_apply that opens reading() for a version that came by Receive: it must not wait on the apply."""
import threading

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
seen = []
done = threading.Event()
rx = None


def on_apply(v):
    try:
        with rx.reading(timeout=2.0):
            seen.append((v, "read", float(rx.weights["w"][0])))
    except ws.SyncTimeoutError:
        seen.append((v, "timeout", None))
    if v >= 1:
        done.set()


w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="push", on_apply=on_apply)
    connect_inproc(s, [rx])
    w["w"].fill_(1.0)
    try:
        s.send(timeout=15)
    except ws.WeightSyncError as e:
        print("send raised", type(e).__name__)
    done.wait(15)
    rx.close()
print("on_apply saw:", seen)
after = [x for x in seen if x[0] >= 1]
if not after:
    bug("on_apply was never called for version 1")
if after[0][1] == "timeout":
    bug("on_apply(1) could not open reading(): it runs while the apply's lock is held (API-11)")
if after[0][2] != 1.0:
    bug(f"inside on_apply(1) the weights read {after[0][2]}, not version 1's")
fine("on_apply(1) opened reading() and read version 1")
