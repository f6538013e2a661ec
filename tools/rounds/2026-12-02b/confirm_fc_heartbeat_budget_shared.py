"""Eight scripted receivers (the documented wire on their handles) connect; the trainer sends version 1 to all with
a timeout of 10 s. Each receiver, before it acks, says Heartbeat 15 times a second for 3 s (MSG-4: legal on every
channel; each well inside SEC-8's 64 a second), as a network worker under a short lease would. The send must return
version 1: no receiver broke SEC-8, so none may be cut off as a violator."""
import threading
import time

import torch
from _confirm import bug, fine, module
from _wirepeer import Peer

ws = module()
N = 8
s = ws.Sender({"w": torch.zeros(8)}, N)
peers = [Peer(s.handle(i), timeout=20) for i in range(N)]
errors = []


def handshake(p):
    init = p.read()
    while init["type"] == "Heartbeat":
        init = p.read()
    p.send(p.ready_msg(init))
    return init


def serve(p, rid):
    try:
        m = p.read()
        while m["type"] == "Heartbeat":
            m = p.read()
        assert m["type"] == "Receive", m
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            p.send({"type": "Heartbeat"})
            time.sleep(1 / 15)
        p.send({"type": "Ack", "receiver": rid, "version": m["version"], "status": "ok", "detail": ""})
    except Exception as e:  # noqa: BLE001
        errors.append(e)


hs = [threading.Thread(target=handshake, args=(p,), daemon=True) for p in peers]
for t in hs:
    t.start()
s.connect(timeout=10)
for t in hs:
    t.join(10)
ts = [threading.Thread(target=serve, args=(p, i), daemon=True) for i, p in enumerate(peers)]
for t in ts:
    t.start()
err, got = None, None
try:
    got = s.send({"w": torch.ones(8)}, timeout=10)
except ws.WeightSyncError as e:
    err = e
for t in ts:
    t.join(5)
for p in peers:
    p.close()
s.close()
if isinstance(err, ws.ReceiverError) and "violation" in err.causes.values():
    bug(f"receivers {err.workers} were cut off as violators ({str(err)[:120]}), though each said Heartbeat only "
        "15 times a second (SEC-8 budgets each peer)")
if err is not None:
    raise SystemExit(f"send raised {type(err).__name__}: {err}: no verdict")
fine(f"send returned {got}")
