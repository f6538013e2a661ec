"""Bug: a sender listening on tcp:// runs one TCPStore for all its network receivers, made at the first join and
kept until the process ends, instead of one store per receiver incarnation ended after its first transfer: every
Init names the same `store`, each incarnation apart only by its fresh `prefix`. Any worker that joined (or anyone
who reaches the port and has seen one prefix) can write keys and bytes into the store the other workers' joins use,
for the trainer's whole life: one buggy or hostile worker grows the trainer's memory without bound and can disturb
the group construction of every later joiner (a restart, a late worker). A careful implementer could have written
it from NET-1/NET-2: Init carries "`prefix` (a key prefix fresh for this receiver's incarnation ...)", and a fresh
prefix per incarnation looked like all the separation needed, a TCPStore per join (a server thread and a port each,
started with a reverse-DNS lookup) like waste. Breaks NET-6 ("The sender runs one store per receiver incarnation: no
two Inits it has sent name the same `store` while both stores run. It MUST end that store once the transfer of the
Init's version to that incarnation has completed, or once the incarnation is gone").
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, netplane  # noqa: F401

VIOLATES = ("NET-6",)

_shared: dict = {}
_lock = threading.Lock()


class _SharedStore(netplane.Store):
    def close(self) -> None:
        pass  # BUG: the store serves every incarnation; each is apart by its prefix


def make_store(host, transfer_timeout, lease, done):
    """One store per listening host, made at the first join and kept (BUG)."""
    def run():
        try:
            with _lock:
                key = (host, transfer_timeout, lease)
                made = _shared.get(key)
                if made is None:
                    made = _shared[key] = _SharedStore(host, transfer_timeout, lease)
        except Exception as e:  # noqa: BLE001
            made = e
        done(made)

    threading.Thread(target=run, name="weightsync-store", daemon=True).start()


netplane.make_store = make_store
