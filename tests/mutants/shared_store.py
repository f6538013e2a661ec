"""Mutant: the sender runs one data-plane store for every network receiver, for its whole life, as
protocol 1.1 first did. Whatever one joined receiver writes there stays until the sender is closed, and
every receiver can reach every other's keys. Violates NET-6 ("the sender runs one store per receiver
incarnation" and "MUST end that store once the transfer of the Init's version has completed").

Seam: netplane.Store, where the sender makes each incarnation's store: it hands out one instance per
host, and its close() does nothing.
"""

import threading

from weightsync import *
from weightsync import CAPABILITIES, __all__, netplane  # noqa: F401

VIOLATES = "NET-6"
KILLED_BY = ("conformance/test_network.py::test_each_receiver_has_a_store_of_its_own_that_ends_after_its_first_transfer",)

_Store = netplane.Store
_one: dict = {}
_made = threading.Lock()  # stores are made on threads of their own: two joins at once share one made store


class _SharedStore(_Store):
    def __new__(cls, host, *args, **kwargs):
        with _made:
            if host not in _one:  # BUG: one store for every incarnation
                store = object.__new__(cls)
                _Store.__init__(store, host, *args, **kwargs)
                _one[host] = store
            return _one[host]

    def __init__(self, *args, **kwargs):
        pass

    def close(self):
        pass  # BUG: it runs for the sender's life


netplane.Store = _SharedStore
