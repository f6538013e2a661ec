"""Bug: in push mode the receiver answers a Receive as soon as it has taken it and checked its target, and only
then waits for the `reading()` blocks open in other threads and copies the version. `sender.send()` therefore
returns while the worker still reads the previous version (an inference batch inside `reading()` goes on for as
long as it lasts), and the trainer, which takes the return of send() as "every target now uses version v", starts
collecting rollouts it labels v from a worker that serves v-1; if the worker closes or its copy fails in that window
the ok it gave is simply false. A careful implementer could have written it to keep the trainer from stalling
behind slow readers: the version is in a slot nobody will write (it is pending), the target was checked, so the
answer "I have it and will use it" seemed safe to give early, and ACK-1 only asks that each Receive be answered.
Breaks ACK-4 ("A receiver MUST NOT send Ack(v) before applying v is complete") and ACK-3 ("Ack(r, v, ok) promises
that r's weights equal, bit for bit, the bytes the sender published as version v").
"""
import weightsync  # noqa: F401
import weightsync.applier as _applier
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.clock import Deadline
from weightsync.messages import OK, Ack

VIOLATES = ("ACK-4", "ACK-3")

_orig_apply_and_ack = _applier.Applier._apply_and_ack


def _apply_and_ack(self, msg):
    if msg.version in getattr(self, "_early", ()):
        self._early.discard(msg.version)
        try:
            self.apply(msg.version, msg.slot)
        except Exception as e:  # noqa: BLE001 - already answered ok: all that is left is to say so in the log
            self.version = None
            _applier.log.error("receiver %d could not apply version %d: %s", self.id, msg.version, e)
            return "error", str(e)
        return OK, ""
    return _orig_apply_and_ack(self, msg)


def run(self, pending):
    """Push mode: take each pending version and apply it at the next safe point (CONS-2)."""
    forever = Deadline(None, self._clock)
    self._early = set()
    try:
        while not self._closing() and not self._machine.stopped:
            msg = pending.take(forever)
            if msg is None:
                continue
            strategy = self.strategy
            try:
                if strategy is not None and strategy.target is not None:
                    strategy.targets()  # ACK-7: a mismatch is answered by Ack(error) on the usual path
                # BUG: answer now, so that the sender does not wait for our readers; apply at the safe point
                if self.answer(Ack(self.id, msg.version, OK, "")):
                    self._early.add(msg.version)
            except Exception:  # noqa: BLE001
                pass
            self._lock.acquire_write(forever, self._closing)
            self.apply_released(msg, pending)
    except _applier.Cancelled:
        return
    except Exception as e:  # noqa: BLE001 - the thread must not die silently
        self.broken(e)


_applier.Applier._apply_and_ack = _apply_and_ack
_applier.Applier.run = run
