"""A done callback chains the next send (API-11: it runs never with the sender's lock held, so it may call the
sender). The receiver acks version 1 only once the callback is added; the callback's send must go through."""
import threading
import time

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0), timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise out["error"]
f = s.send_async()
rec = peer.read()
assert rec["type"] == "Receive" and rec["version"] == 1, rec
seen, called = {}, threading.Event()


def chain(fut):
    try:
        seen["next"] = s.send_async(timeout=2).version
    except BaseException as e:  # noqa: BLE001
        seen["error"] = e
    called.set()


f.add_done_callback(chain)
time.sleep(0.2)
peer.send({"type": "Ack", "receiver": 0, "version": 1, "status": "ok", "detail": ""})
if not called.wait(8):
    s.close()
    bug("the done callback was not called within 8 s of the ack")
s.close()
if "error" in seen:
    bug(f"a done callback that calls the sender got {type(seen['error']).__name__}: {str(seen['error'])[:100]}")
if seen.get("next") != 2:
    bug(f"the chained send gave {seen!r}")
fine("the done callback's send_async went through (version 2)")
