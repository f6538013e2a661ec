"""Mutant (from the outside round of 2026-12-01b, where it survived): a receiver that coalesces Receives (ACK-2:
several pending, it applies only the newest) maps the slots that the Receive it keeps introduces, and closes the
handles that a superseded Receive brought with it. The implementer reasoned per message: a Receive it will never
apply needs nothing, so the handles beside it are released at once instead of leaking, and the kept one's new slots
are mapped when it is taken. But a slot is introduced once per channel (SLOT-5) and its handle reaches the receiver
only then (SLOT-1): when a later Receive names the slot that a skipped one introduced, the receiver has no mapping
for it, fails the apply and answers Ack(error) for a version it was given correctly; the trainer's send fails with
ReceiverError, and it keeps failing each time the sender rotates back to that slot. It shows with pull workers that
poll rarely, the very case in which the sender must allocate new slots (SLOT-3). Violates ACK-2, SLOT-1 and ACK-1.

Seam: ChannelPending._read, which closes the handles of a Receive it supersedes and maps only the kept one's new
slots.
"""

import os

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import pending as _pending
from weightsync.clock import Deadline
from weightsync.messages import Receive
from weightsync.session import Ended, Message

VIOLATES = ("ACK-2", "SLOT-1", "ACK-1")
KILLED_BY = ("conformance/test_receiver_wire.py::test_a_slot_introduced_by_a_skipped_receive_stays_known",)


def _read(self, deadline: Deadline) -> None:
    """Reads every message that is ready, waiting until `deadline` for one when none is pending."""
    ch = self._channel
    got = False
    fresh = None  # BUG: the newest Receive read now, with its handles; a superseded one's handles are closed
    try:
        while not self._closing():
            event = ch.next_event() if got else ch.wait_event(
                Deadline(0.0, ch.now) if self._newest.pending is not None else deadline, self._wake_fd)
            if event is None:
                return
            if isinstance(event, Message):
                if isinstance(event.msg, Receive):
                    if fresh is not None:
                        for fd in fresh[1]:  # it will never be applied: nothing of it is needed
                            try:
                                os.close(fd)
                            except OSError:
                                pass
                    fresh = (event.msg, event.fds)
                    self._newest.offer(event.msg)
                got = True
                if self._machine.stopped:
                    return
                continue
            if isinstance(event, Ended):
                self._machine.channel_closed()
            return
    finally:
        if fresh is not None and fresh[0].new_slots:
            self._applier.map(fresh[0].new_slots, fresh[1])


_pending.ChannelPending._read = _read
