"""A scripted receiver takes Receive(1) and answers with the first bytes of its Ack, then one more byte every
second. WIRE-7: 10 s after the frame's first byte the sender treats it as a violation: `future.wait(14)` raises
ReceiverError (cause violation) naming receiver 0, not SyncTimeoutError at 14 s."""
import threading
import time

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer, frame

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0), timeout=20)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise out["error"]
f = s.send_async(timeout=5)
rcv = peer.read()
assert rcv["type"] == "Receive", rcv
ack = frame({"type": "Ack", "receiver": 0, "version": rcv["version"], "status": "ok", "detail": ""})
stop = threading.Event()


def trickle():
    peer.send_raw(ack[:6])
    k = 6
    while not stop.wait(1.0) and k < len(ack) - 1:
        try:
            peer.send_raw(ack[k:k + 1])
        except OSError:
            return
        k += 1


t0 = time.monotonic()
threading.Thread(target=trickle, daemon=True).start()
try:
    f.wait(timeout=14)
    res = "returned"
except ws.WeightSyncError as e:
    res = e
el = time.monotonic() - t0
stop.set()
s.close()
peer.close()
if isinstance(res, ws.ReceiverError) and getattr(res, "causes", {}).get(0) == "violation" and el < 13:
    fine(f"the Ack trickled a byte a second was cut off as a violation after {el:.1f}s")
bug(f"an Ack trickled a byte a second was still waited for: wait(14) gave {type(res).__name__ if not isinstance(res, str) else res} "
    f"after {el:.1f}s: {str(res)[:140]}")
