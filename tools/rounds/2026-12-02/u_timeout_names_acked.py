"""Bug: a send (or `wait`) that times out raises a SyncTimeoutError naming every target of the send, those that
already acked it included, each with cause "timeout": with one slow worker among eight, the error says eight
workers did not answer, and a trainer whose `except SyncTimeoutError as e:` restarts `e.workers` (or drops them,
or leaves them out of the next send) restarts the seven healthy ones too. A careful implementer could have
written it from SEND-2's "Each names the receivers (`workers`) and the version": `workers` is the name of the
send's own argument, its targets, so a send that timed out "as a whole" names its `workers`; failures already
known keep their own cause. Breaks SEND-2 ("SyncTimeoutError (no answer before the timeout). Each names the
receivers"; 8.4: `.workers` is "The targets that have not answered"), SEND-7 ("`.workers` lists every receiver
at fault"; `timeout`: "it had not answered when the call's timeout passed") and API-4 (`.causes` of a receiver
that acked ok).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, future  # noqa: F401
from weightsync.errors import TIMEOUT, ClosedError, receivers_error
from weightsync.messages import OK

VIOLATES = ("SEND-2", "SEND-7", "API-4")


def _error(self, timed_out):
    if self._window.closes is None and not timed_out and not self._closed_on:
        return None
    causes = {w: c for w, (c, _) in self._outcome.items() if c != OK}
    details = {w: d for w, (c, d) in self._outcome.items() if c != OK}
    if self._closed_on and not causes:
        return ClosedError(f"the sender was closed before receiver(s) {self._closed_on} answered version "
                           f"{self.version} (LIFE-8)")
    if timed_out:
        for w in self.workers:  # BUG: the send timed out, so every target not known failed is named "timeout"
            if w not in causes:
                causes[w], details[w] = TIMEOUT, "no answer before the timeout"
    if not causes:
        return None
    hint = "" if set(causes.values()) - {TIMEOUT} else "it may still ack later"
    return receivers_error(causes, details, self.version, hint)


future.SendFuture._error = _error
