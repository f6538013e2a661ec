"""A listening sender drops a worker (API-9), then calls connect(workers=[1]) and the replacement process joins
with the same URL a second later: connect must wait for it and return (RDV-5, LIFE-2)."""
import os
import threading
import time

import _confirm
import i_helpers as H

ws = _confirm.module()
w0 = H.weights(0)
live = {k: v.clone() for k, v in w0.items()}
name = f"i-rejoin-{os.getpid()}"
with ws.Sender(live, 2, listen=f"unix:@{name}") as sender:
    r0 = ws.Receiver(sender.url(0), H.zeros_like(w0))
    r1 = ws.Receiver(sender.url(1), H.zeros_like(w0))
    _confirm.connect_inproc(sender, [r0, r1], timeout=20)
    for k, v in H.weights(1).items():
        live[k].copy_(v)
    assert sender.send(timeout=10) == 1
    sender.drop(1)  # worker 1 hung: the trainer cuts it off and asks for a new one
    r1.close()
    box = {}

    def replacement():
        time.sleep(1.0)  # the launcher starts the new process a moment later
        r = box["r"] = ws.Receiver(sender.url(1), H.zeros_like(w0))
        try:
            box["v"] = r.connect(timeout=20)
        except BaseException as e:  # noqa: BLE001
            box["e"] = e

    t = threading.Thread(target=replacement, daemon=True)
    t.start()
    start = time.monotonic()
    try:
        sender.connect(timeout=15, workers=[1])
    except ws.WeightSyncError as e:
        _confirm.bug(f"connect(workers=[1]) raised {type(e).__name__} after {time.monotonic() - start:.2f} s instead "
                     f"of waiting for the replacement to join: {getattr(e, 'details', e)} (RDV-5, LIFE-2)")
    t.join(20)
    print("connect returned after", round(time.monotonic() - start, 2), "s; replacement:", box.get("v"), box.get("e"))
    if box.get("v") != 1 or not H.same(dict(box["r"].weights), H.weights(1)):
        _confirm.bug(f"the replacement did not start from version 1: {box}")
    v = sender.send(timeout=10)
    box["r"].close()
    r0.close()
_confirm.fine(f"connect waited for the replacement, which took version 1; the next send returned {v}")
