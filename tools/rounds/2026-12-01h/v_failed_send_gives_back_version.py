"""Bug: a synchronous send that every target answered with Ack(error) gives its version number back: `sender.version`
steps back as if nothing had been published, and the next send publishes the same number again. The workers that
failed were told that number in their Receive; the repair send (after the worker put its target right) names it a
second time, so each of them takes the sender for a protocol violator and stops (poll() raises RemoteProtocolError
naming VER-3, and the trainer sees the worker gone: ReceiverDiedError), and a worker that joins meanwhile is told the old number for the failed
version's bytes. A careful implementer could have written it from VER-2 ("A send that is rejected before publishing
MUST NOT consume a version"), taking a send refused by every target for a rejected one ("nobody holds it, so nothing
was published"). Breaks VER-1 ("`sender.version` is the last published version"), VER-3 ("The versions a receiver is
told to receive are strictly increasing ... an Ack(error) notwithstanding") and ACK-6 ("a later send can bring it back
to a defined version").
"""
import weightsync  # noqa: F401
import weightsync.publishing as _publishing
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import ANSWERED_ERROR, ReceiverError

VIOLATES = ("VER-1", "VER-3", "ACK-6")

_await_answers = _publishing.Publisher.await_answers


def await_answers(self, future, deadline):
    try:
        return _await_answers(self, future, deadline)
    except ReceiverError as e:
        # BUG: refused by every target: taken for a send that published nothing (VER-2), its number given back
        if (future.version == self.version and sorted(e.causes) == sorted(future.workers)
                and set(e.causes.values()) == {ANSWERED_ERROR}):
            self.version -= 1
        raise


_publishing.Publisher.await_answers = await_answers
