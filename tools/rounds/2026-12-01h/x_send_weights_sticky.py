"""Bug: `send(weights)` makes the weights it was given the ones that later sends without weights re-read: the sender
keeps the last weights passed to a send as its source. A trainer that publishes one version from other tensors (an
EMA or an evaluation snapshot sent once, or, as the packed guide shows, a re-packed `Packed` after a tensor left the
buffer) and then goes back to `sender.send()` keeps sending those other tensors: the workers ack every later version
with the snapshot's values, while the model they were meant to follow trains on. A careful implementer could have
written it from the packed guide's advice to "pass the new Packed to each send", reading the weights of a send as the
new weights of the sender ("the latest weights the caller showed us"), as sticky arguments of other APIs are. Breaks
API-2 ("`weights=None` re-reads the object the sender was built from").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, publishing  # noqa: F401

VIOLATES = ("API-2",)

_publish = publishing.Publisher.publish


def publish(self, weights, workers, deadline):
    future = _publish(self, weights, workers, deadline)
    if weights is not None:
        self.source = weights  # BUG: the weights of the last send become what send() re-reads
    return future


publishing.Publisher.publish = publish
