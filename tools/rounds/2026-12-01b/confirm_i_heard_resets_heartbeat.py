"""An idle, healthy TCP receiver (network profile) under a sender with lease=2 s and heartbeat=0.3 s (API-10):
after 4 s of idleness it must still be live, and a send to it must succeed (NET-4)."""
import time

import _confirm
import i_helpers as H

ws = _confirm.module()
w0 = H.weights(0)
live = {k: v.clone() for k, v in w0.items()}
with ws.Sender(live, 1, listen="tcp://127.0.0.1:0", lease=2.0, heartbeat=0.3) as sender:
    r = ws.Receiver(sender.url(0), H.zeros_like(w0))
    _confirm.connect_inproc(sender, [r], timeout=20)
    time.sleep(4.0)  # idle: no call of the trainer runs, the helper thread keeps the channel (NET-4)
    stopped = r.stopped
    for k, v in H.weights(1).items():
        live[k].copy_(v)
    try:
        v = sender.send(timeout=10)
    except ws.ReceiverDiedError as e:
        _confirm.bug(f"the idle, healthy receiver was named gone: {e.details} (NET-4)")
    except ws.WeightSyncError as e:
        _confirm.bug(f"the send to the idle receiver failed: {type(e).__name__}: {e} (NET-4)")
    print("send returned", v, "receiver version", r.version, "stopped before the send:", stopped)
    if stopped or not H.same(dict(r.weights), H.weights(1)):
        _confirm.bug("the receiver stopped or missed version 1 (NET-4)")
    r.close()
_confirm.fine("an idle TCP receiver stayed live and took version 1")
