"""Bug: the sender checks the receiver id that Init's answer (Ready) names, but not the one an Ack names: once
the handshake has tied the channel to its receiver, an Ack on that channel is taken as that receiver's whatever
its `receiver` field says. The implementer read spec 3.2's "Since each channel belongs to one receiver, the
name is redundant" as licence to skip the field on the hot path, keeping MSG-2's check for the handshake. A
worker process that speaks for another id (a handle passed to the wrong process, a worker that rebuilt its
answers with the id it was configured with) then completes sends for a receiver it is not, and the trainer
believes that receiver holds the version.

Breaks MSG-2: "A message that names a receiver id MUST name the receiver whose channel carries it; otherwise
it is a protocol violation" (SM-S-9: the sender closes the channel, moves it to failed, and its sends fail
with ReceiverError).
"""
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import ANSWERED_ERROR
from weightsync.messages import OK, PROTOCOL_VERSION, STATUSES, Ack, Heartbeat, Ready
from weightsync.protocol import NOTHING, Settled, message_event, same_major

VIOLATES = ("MSG-2", "SM-S-9")


def handle(self, msg):
    """Applies a message from this receiver: what it settles, or RemoteProtocolError (SM-S-9)."""
    if type(msg) is Ack and msg.status in STATUSES:  # BUG: the channel is the receiver's; its id is redundant
        return self._ack(msg, self._step("recv Ack"))
    event = message_event(msg)
    who = f"receiver {self.id}"
    rid = getattr(msg, "receiver", self.id)
    if rid != self.id:
        raise self._bad(event, f"{who} sent a message for receiver {rid}", "MSG-2")
    status = getattr(msg, "status", OK)
    if status not in STATUSES:
        raise self._bad(event, f"{who} sent status {status!r}; only 'ok' and 'error' exist", "MSG-1")
    nxt = self._step(event)
    if isinstance(msg, Heartbeat):
        return NOTHING
    if isinstance(msg, Ready):
        (version, slot), = self.pending.items()
        if msg.status != OK and msg.version is not None:
            raise self._bad(event, f"{who} answered Ready(error) with version {msg.version}; a refusal carries "
                            "none (Table 1)", "SM-S-9")
        if msg.status == OK and msg.version != version:
            raise self._bad(event, f"{who} answered Ready for version {msg.version}, Init carried {version}", "INIT-4")
        if msg.status == OK and not same_major(msg.protocol, PROTOCOL_VERSION):
            raise self._bad(event, f"{who} answered Ready(ok) in protocol {msg.protocol}; it must refuse an Init of "
                            f"protocol {PROTOCOL_VERSION} (INIT-2)", "SM-S-2")
        self.pending.clear()
        if msg.status == OK:
            self.holds_slot = msg.holds_slot
            self.held = {slot} if msg.holds_slot else set()
            self.acked = version
        else:
            self.failure, self.cause = msg.detail or "handshake failed", ANSWERED_ERROR
            self.unreported = True
        self.state = nxt
        return Settled((version,), msg.status, msg.detail)
    assert isinstance(msg, Ack)
    return self._ack(msg, nxt)


_protocol.PeerMachine.handle = handle
