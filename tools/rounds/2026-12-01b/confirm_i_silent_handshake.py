"""A TCP receiver whose handshake takes 3.5 s (its target is slow to read the first time, as a large model's apply
is slow), under a sender with lease=1.5 s (API-10): it must not be named gone while it connects (NET-4)."""
import threading
import time
from collections.abc import Mapping

import _confirm
import i_helpers as H

ws = _confirm.module()


class SlowTarget(Mapping):
    """A mapping target whose first traversal after arm() takes `delay` seconds (a large target's first read)."""

    def __init__(self, d, delay):
        self._d, self._delay, self._armed = d, delay, False
        self._lock = threading.Lock()

    def arm(self):
        self._armed = True

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        with self._lock:
            armed, self._armed = self._armed, False
        if armed:
            time.sleep(self._delay)
        return iter(self._d)

    def __len__(self):
        return len(self._d)


w0 = H.weights(0)
with ws.Sender({k: v.clone() for k, v in w0.items()}, 1, listen="tcp://127.0.0.1:0", lease=1.5,
               heartbeat=0.3) as sender:
    target = SlowTarget(H.zeros_like(w0), 3.5)
    r = ws.Receiver(sender.url(0), target)
    target.arm()
    out, t = _confirm.in_thread(r.connect, 20)
    try:
        sender.connect(timeout=20)
    except ws.ReceiverDiedError as e:
        t.join(10)
        _confirm.bug(f"the sender named the connecting receiver gone: {e.details} (NET-4)")
    except ws.WeightSyncError as e:
        _confirm.bug(f"sender.connect failed: {type(e).__name__}: {e}")
    t.join(20)
    if "error" in out:
        _confirm.bug(f"receiver.connect raised {type(out['error']).__name__}: {out['error']}")
    print("connected at version", out.get("result"), "weights equal:", H.same(dict(r.weights), w0))
    if not H.same(dict(r.weights), w0):
        _confirm.bug("the receiver does not hold version 0")
    r.close()
_confirm.fine("a slow handshake was kept alive by the receiver's Heartbeats")
