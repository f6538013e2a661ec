"""Bug: once a target has failed, a send or wait whose timeout passes inside the SEND-7 collection window
raises the failure alone and does not name the targets that were still silent at the timeout (an
implementer who reads "timeout" as the fallback cause for a call where nothing else went wrong)."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = ("SEND-7", "SEND-2")


def _await_answers(self, future, deadline):
    looked = False
    while True:
        complete = future._complete
        by = None if complete else future._settle_by()
        if complete or (by is not None and self.hub.clock() >= by):
            error = future._error(timed_out=False)
            if error is None:
                return future.version
            raise error
        if deadline.expired():
            if not looked:
                looked = True
                self.hub.take_arrived()
                continue
            # BUG: a known failure is raised alone; the silent targets are named only when nobody failed
            error = future._error(timed_out=by is None)
            assert error is not None
            raise error
        self.hub.wait_for_events(deadline.earlier(by))


Publisher.await_answers = _await_answers
