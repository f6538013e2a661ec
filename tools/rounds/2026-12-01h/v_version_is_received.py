"""Bug: `receiver.version` reports the newest version the sender has announced to the receiver (the last Receive its
channel delivered), not the version its weights hold, once it holds one. While `reading()` blocks hold an apply back
(push), or readers in other threads hold a pull receiver's version back past poll()'s timeout, `receiver.version`
already names the new version and the weights are still the old ones: an RL worker that tags each rollout with
`receiver.version` read inside its `reading()` block (for off-policy corrections, or to drop stale rollouts) labels
data made with version v-1 as version v. A careful implementer could have written it from the receiver's state
machine, which keeps "the newest version it was told" for VER-3 and takes a Receive as the step "live -> live: recv
Receive (applied at a safe point)", so the version is known the moment the Receive is accepted; they kept None for
undefined weights (ACK-6) and took the machine's number otherwise. Breaks CONS-1 ("code inside `reading()` ... sees
every array at one version", the version the receiver reports among them) and API-3 (`.version`, the version the
weights hold, None only before connect and after Ack(error), ACK-6).
"""
import weightsync  # noqa: F401
import weightsync.receiver as _receiver
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("CONS-1", "API-3")


def _version(self):
    if self._applier.version is None:  # before connect, and after Ack(error): undefined weights (ACK-6)
        return None
    return self._machine.received  # BUG: the newest version accepted from the sender, applied or not


_receiver.Receiver.version = property(_version, doc=_receiver.Receiver.version.__doc__)
