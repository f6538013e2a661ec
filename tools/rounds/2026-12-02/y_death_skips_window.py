"""Bug: when the first target of a send to fail is one that died (its channel ended), `send()` / `future.wait()`
raises at once, naming that receiver alone: the SEND-7 collection window is opened only by an Ack(error) or a
violation. Two workers that die a fraction of a second apart (the OOM killer taking two processes, a node losing
its GPUs) are reported one at a time: the trainer restarts the first, and its next send raises for the second,
which it could have restarted in the same pass. A careful implementer could have written it from SEND-3's "A dead
receiver is detected without any timeout: end of its channel fails every pending send to it, and a send or wait
waiting on it raises ReceiverDiedError within the reaction bound", read as "a death raises now", and kept SEND-7's
"keeps collecting the other targets' answers ... 1 s" for error answers, which may come in a burst. Breaks SEND-7
("After the first failure among a call's targets, the call keeps collecting the other targets' answers until each of
them has answered, 1 s has passed since that failure, or the call's timeout has passed"; "MUST name every receiver at
fault that is known when it is raised").
"""
import weightsync  # noqa: F401
import weightsync.future as _future
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import DIED
from weightsync.messages import OK

VIOLATES = ("SEND-7",)


def _settle(self, worker, cause, detail):
    if worker in self._outcome or worker not in self.workers:
        return
    self._outcome[worker] = (cause, detail)
    self._answered[worker] = self._clock() - self._published
    if cause != OK:
        now = self._clock()
        self._window.failed(now)
        if cause == DIED:  # BUG: "a dead receiver ... raises within the reaction bound": no window for a death
            self._window.closes = min(self._window.closes, now)


_future.SendFuture._settle = _settle
