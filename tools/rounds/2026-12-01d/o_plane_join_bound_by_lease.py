"""Bug: the sender gives a network receiver its lease, not Init's `timeout_ms`, to set its `joined` key and begin
its side of the data plane. The implementer read NET-5's "it stops waiting as soon as that receiver is gone" with
NET-4 in mind ("a receiver silent for a lease is gone") and bounded the data-plane join by the lease, the timer
that says a receiver is gone, while the receiver keeps its channel alive with Heartbeats all along. With the
defaults (5 s lease) a worker whose side takes longer to start (torch's store client and gloo device resolve the
host name, seconds on a slow resolver; a loaded host) is named gone and can never join, though the Init told it
it had `timeout_ms` (60 s).

Breaks NET-5 ("a receiver whose key has not appeared within Init's timeout_ms is gone") and NET-4 ("a receiver's
handshake included (building its side of the data plane, taking its first transfer and applying it may outlast
the lease)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, netplane  # noqa: F401

VIOLATES = ("NET-5", "NET-3")


def _serve(self):
    prefix, hostname, timeout = self._args
    try:
        store = self._connect(timeout)
        # BUG: a receiver that has not joined its data plane within its lease is taken for silent
        if not self._joined(netplane.dist.PrefixStore(prefix, store), min(timeout, self._store.lease)):
            return
        group = netplane._group(store, prefix, 0, hostname, timeout)
    except Exception as e:  # noqa: BLE001
        self._fail(f"the data plane could not be built: {type(e).__name__}: {e}")
        return
    self._group = group
    if self._aborted:
        netplane._abort(group)
        self._group = None
        return
    try:
        while (item := self._queue.get()) is not None:
            version, buffer = item
            try:
                group.send([buffer], 1, 0).wait()
            except Exception as e:  # noqa: BLE001
                self._fail(f"the transfer of version {version} failed: {type(e).__name__}: {e}")
                return
            self._store.close()
    finally:
        self._group = None
        del group


netplane.Lane._serve = _serve
