"""Bug: when a channel's end of file has been read, the session reports the end before the messages still buffered
ahead of it. The implementer read SEND-3 ("end of its channel fails every pending send to it") as "once the end is
seen, whatever is pending fails", and put the end-of-channel check first: the peer is gone, so what it left behind
no longer matters. But an Ack that arrived before the end answered its version: a worker that acks a version and
exits at once (an evaluator that takes one version and quits, a worker told to finish), or whose Ack and exit the
trainer reads in one go because it was busy, has its acked version failed as "died": `wait()` raises
ReceiverDiedError for a version every target acked ok (SEND-1, ACK-2), and `close()` fails it too (LIFE-8: acks that
reached the sender's end of the channel, read or not, complete their version).
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("SEND-1", "SEND-3", "LIFE-8")

from weightsync import session as _session  # noqa: E402
from weightsync.messages import Heartbeat as _Heartbeat  # noqa: E402
from weightsync.protocol import Settled as _Settled  # noqa: E402
from weightsync.timers import Liveness as _Liveness  # noqa: E402


def next_event(self, now):
    machine = self.machine
    assert machine is not None, "attach() a machine before asking for events"
    if self.liveness is None and not self.eof and not self._reader.partial:
        return None
    if self.eof:  # THE BUG: the end of the channel first (was: after every message buffered ahead of it)
        return _session.Ended(_session.EOF_WHY)
    while (item := self.next_message(now)) is not None:
        msg, fds = item
        try:
            if self._settles:
                settled = machine.handle(msg)
                assert type(settled) is _Settled, "the sender's view of a receiver settles answers"
                if settled.versions or type(msg) is not _Heartbeat:
                    return settled
                continue
            machine.handle(msg)
        except _session.RemoteProtocolError:
            self.orphans.extend(fds)
            raise
        if self._joining and machine.joined:
            self.allowed, self._reader.max_frame = machine.after()
            self._joining = False
        if type(msg) is not _Heartbeat:
            return _session.Message(msg, fds)
    if self.frame.overdue(now):
        raise self.frame.violation(machine.state.value)
    if self.liveness is not None:
        due = self.liveness.due(now)
        if due == _Liveness.EXPIRED:
            return _session.Ended(self.liveness.expiry(), expired=True)
        if due == _Liveness.HEARTBEAT_DUE:
            return _session.HEARTBEAT_DUE
    return None


_session.Session.next_event = next_event
