"""Bug: a pull receiver's `stopped` turns true only once a `poll()` has read the sender's Stop or the end of its
channel; reading `stopped` does not look at the channel. A pull worker that runs `while not receiver.stopped:`
and polls rarely, or only when its own work asks for fresh weights (an evaluator that polls once per episode, a
worker that got the version it needed and keeps serving it), never leaves its loop after the trainer closed: the
process outlives the trainer. The implementer took the informative sentence of 9.4, "A pull-mode receiver reads
its channel only inside `poll()`, so it notices Stop there", for the whole rule, and made `stopped` a plain read
of the receiver's state, as it is in push mode, where the apply thread reads the channel.

Breaks LIFE-7 ("its `stopped` MUST also turn true without a `poll()` once its channel has ended ... reading
`stopped` looks at the channel without taking a message from it") and SM-R-8 ("`receiver.stopped` MUST be true
exactly when the receiver is in state stopped").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.receiver import Receiver

VIOLATES = ("LIFE-7", "SM-R-8")


def stopped(self):
    # BUG: a pull receiver notices the end of its channel only in poll()
    return self._machine.stopped


Receiver.stopped = property(stopped, doc=Receiver.stopped.__doc__)
