"""Bug: an error about receivers that failed in different ways is an instance of one class only, the class of
its gravest cause (died before error/violation before timeout), not of each cause it carries: a send in which
one worker answered Ack(error) and another died raises a plain ReceiverDiedError, so the trainer's
`except ReceiverError:` repair path never runs for the first worker (and a died+timeout error escapes
`except SyncTimeoutError:`). The implementer read SEND-7's "the error is an instance of the class of each
cause" as "of the class of its cause" and, needing one class for several causes, picked the one whose remedy
comes first (a restart before a repair before a wait), trusting `.causes` to tell the rest. Breaks SEND-7
("In the binding the error is an instance of the class of each cause it carries: ReceiverError for `error`
and `violation`, ReceiverDiedError for `died`, SyncTimeoutError for `timeout`"), API-4 ("an error about
receivers that failed in different ways is an instance of each of their classes").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting, errors, future, publishing  # noqa: F401

VIOLATES = ("SEND-7", "API-4")


def receivers_error(causes, details, version, hint=""):
    kinds = set(causes.values())
    # BUG: one class for the whole error, that of the gravest cause, instead of the class of every cause.
    if errors.DIED in kinds:
        cls = errors.ReceiverDiedError
    elif kinds & {errors.ANSWERED_ERROR, errors.VIOLATION}:
        cls = errors.ReceiverError
    else:
        cls = errors.SyncTimeoutError
    return cls(causes, version, details, hint=hint, causes=causes)


errors.receivers_error = receivers_error
future.receivers_error = receivers_error
connecting.receivers_error = receivers_error
publishing.receivers_error = receivers_error
