"""Two scripted receivers connect; a send(timeout=10) goes to both. Receiver 0 closes its channel as soon as the
Receive arrives (it died), receiver 1 a third of a second later. SEND-7: the send keeps collecting for 1 s after the
first failure, so the one error names both, each with cause "died"."""
import threading
import time

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
peers = [Peer(s.handle(i), timeout=15) for i in range(2)]


def serve(peer, delay):
    init = peer.read()
    peer.send(peer.ready_msg(init))
    peer.read()  # the Receive
    time.sleep(delay)
    peer.close()  # the worker dies


threads = [threading.Thread(target=serve, args=(p, d), daemon=True) for p, d in zip(peers, (0.0, 0.35))]
for t in threads:
    t.start()
s.connect(timeout=15)
out, t = in_thread(s.send, {"w": torch.ones(4)}, timeout=10)
t.join(15)
for th in threads:
    th.join(5)
s.close()
err = out.get("error")
if not isinstance(err, ws.ReceiverDiedError):
    raise SystemExit(f"unexpected: {out!r}")
if err.workers != [0, 1]:
    bug(f"receivers 0 and 1 died 0.35 s apart, the send's error names only {err.workers} ({err.causes})")
fine(f"the send's ReceiverDiedError names {err.workers} ({err.causes})")
