"""Bug: `receiver.weights` builds its read-only mapping once, at its first read, and hands out that
same mapping ever after. The implementer saw that a copying receiver's tensors never change identity
(each apply writes into them in place), so the mapping is fixed once the receiver is connected, and
made the property free for workers that read it in a tight loop. A zero-copy receiver is the case
they forgot: its weights are views of the slot holding its version, and each apply from another
slot gives it new views. Its `weights` goes on showing the views of the slot it held when first
read: right after it acked version v it shows an older version, and once the sender reuses that slot
(which it may: the receiver holds another) the bytes change under the worker, half written at times.

Breaks ACK-3 ("Ack(r, v, ok) promises that r's weights equal, bit for bit, the bytes the sender
published as version v, and keep doing so until r applies another version") and ZC-1 ("A zero-copy
receiver exposes read-only views of the slot holding its version").
"""
from types import MappingProxyType

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _receiver
from weightsync.errors import LocalProtocolError

VIOLATES = ("ACK-3", "ZC-1")


def weights(self):
    strategy, init = self._applier.strategy, self._applier.init
    if strategy is None or init is None:
        raise LocalProtocolError("no weights before connect() (SM-R)")
    if self.zero_copy and self._applier.version is None:
        return MappingProxyType({})  # no version held: nothing to view (ACK-6)
    cached = self.__dict__.get("_n_weights")
    if cached is None:  # BUG: built once; the tensors of a receiver never change identity (but a zero-copy one's do)
        names = [e.name for e in init.manifest]
        cached = self.__dict__["_n_weights"] = MappingProxyType(dict(zip(names, strategy.current())))
    return cached


_receiver.Receiver.weights = property(weights, doc=_receiver.Receiver.weights.__doc__)
