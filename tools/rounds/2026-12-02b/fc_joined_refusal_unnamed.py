"""Bug: a receiver whose handshake failed while no `sender.connect()` waited for it (a worker joined by URL, was sent
its Init at once, and refused it with Ready(error), or went away before answering) is never named by a connect():
`sender.connect()` without `workers` waits only for receivers still unconnected or connecting, finds none, and
returns as if every worker were connected. A trainer whose workers are launched by a scheduler and join by URL
before it calls connect() (the listener serves joins from its creation) starts training believing all its workers
are up; the worker built for another model or with a broken target is only named at the first send, as a
ReceiverError out of the training loop. A careful implementer could have written it from 9.1 ("`sender.connect()`
with no `workers` connects every unconnected receiver") and LIFE-2: a failed receiver is not unconnected, so
connect() has nothing to do for it, and its failure is "known" to the next send (SEND-4). Breaks INIT-5 ("A receiver
whose handshake failed while no `connect` waited for it (it joined, or took its handle, and answered Ready(error),
broke the protocol or went away before the caller called `connect`) is named so by the next `sender.connect()`
without `workers`, once, however long ago it failed").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401

VIOLATES = ("INIT-5",)

# BUG: a failure no connect() waited for is left to the next send: nothing marks it for the next connect().
protocol.PeerMachine.unreported = property(lambda self: False, lambda self, value: None)
