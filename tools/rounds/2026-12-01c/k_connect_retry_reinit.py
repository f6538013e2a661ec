"""Bug: `sender.connect()` sends an Init to every receiver it waits for, not only to those that were
never sent one. The implementer read "connect() without workers connects every receiver that
is neither live nor failed nor gone" as "sends each of them its Init" and tested the state
that connect() waits on (unconnected or connecting) instead of "unconnected". The first
connect() behaves; but a connect() that timed out leaves its receivers connecting (their Init
is in the channel), and calling connect() again, the usual reaction to a worker that was slow
to start, or a second thread's connect() while the first still waits, tries a second Init on
the same channel: the sender's table refuses it and connect() raises LocalProtocolError
("event 'send Init' is illegal in state 'connecting'") instead of waiting for the Ready. The
worker, which reads the first Init and answers, is never taken live.

Breaks INIT-5 / API-2: "after it raised for one receiver, calling it again waits for the others"
(connect is bounded by its timeout, and a SyncTimeoutError's receivers "may still" connect).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import protocol as _protocol

VIOLATES = ("INIT-5", "API-2")


def init_due(self, has_channel):
    return self.waiting and has_channel  # BUG: connecting ones too: an Init already went out to them


_protocol.PeerMachine.init_due = init_due
