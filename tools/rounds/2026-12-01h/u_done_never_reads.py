"""Bug: `future.done()` reports only what the sender has already read: it never reads the answers that have
arrived on the channels itself. A trainer that overlaps its next step with a `send_async()` and checks
`while not future.done(): train_more()` (or skips a send while the last one is not done) sees done() stay False
for good once every worker acked, as long as it makes no other call on the sender: on a sender without `listen=`
no thread of the binding reads the channels between calls, so the acks sit unread. A careful implementer could
have written it from API-2's "future.done() never blocks" and 10.4's "when another thread holds the sender it
reports what is known": reading a channel needs the sender's lock, which may block, so done() was kept a pure
look at the future's own state, like `concurrent.futures.Future.done()`. Breaks API-2 ("future.done() never
blocks and turns true, with no other call made, within the reaction bound of the last target's answer arriving:
it reads the answers that have arrived itself").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, future  # noqa: F401

VIOLATES = ("API-2",)


def done(self) -> bool:
    """True once every targeted receiver has answered. Never blocks."""
    return self._complete  # BUG: what is known; the answers that arrived are left for the next call to read


future.SendFuture.done = done
