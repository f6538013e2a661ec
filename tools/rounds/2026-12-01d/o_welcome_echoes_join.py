"""Bug: the listener answers a valid Join with a Welcome that carries the very proof it has just checked (the
Join's proof, echoed), and the joiner accepts a Welcome whose proof equals the one it sent. The implementer read
14.2's "each answers with an HMAC of both challenges and the id" as one HMAC per join, shown by the joiner and
echoed by the sender ("the sender proves it checked the same value"), and never used the `weightsync-welcome`
label. Plain joins work (both ends agree), but a squatter on the address (an abstract name or a TCP port taken
first) needs no secret to pass the joiner's check: it echoes the proof the joiner just sent, and then feeds it
weights of its own (a reflection attack).

Breaks RDV-5 ("the sender answers Welcome (proof: as Join's, over the ASCII bytes weightsync-welcome)") and RDV-7
("A joiner MUST check Welcome's proof before it reads anything further, so that a process squatting on the address
... cannot feed it weights").
"""
import hmac
from typing import cast

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous, transport  # noqa: F401
from weightsync.errors import RefusedError, RemoteProtocolError, SyncTimeoutError
from weightsync.join import JoinMachine
from weightsync.messages import Hello, Join, Refuse, Welcome
from weightsync.session import Message

VIOLATES = ("RDV-5", "RDV-7", "RDV-3")


def _advance(self, j, readable, now, can_join):
    """None while the join is under way; False when it ended without a receiver; else (id, channel)."""
    ch = j.channel
    j.machine.judge = lambda join: self._why_not(j, join, can_join)
    try:
        ch.flush()
        if readable:
            ch.fill()
        event = ch.next_event()
    except (transport.ChannelClosed, RemoteProtocolError):
        ch.close()
        return False
    if event is None and now <= j.deadline:
        return None
    if not isinstance(event, Message):
        j.machine.event("join bound" if event is None else "channel closed")
        ch.close()
        return False
    join = cast(Join, event.msg)
    if not j.machine.joined:
        rendezvous._refuse(ch, j.machine.refusal or rendezvous.REFUSED)
        return False
    try:
        ch.send(Welcome(join.proof))  # BUG: echoes the proof it checked instead of HMAC over "weightsync-welcome"
    except transport.ChannelClosed:
        ch.close()
        return False
    return join.receiver, ch


def _join(ch, address, rid, secret, deadline):
    machine = JoinMachine(listener=False)
    ch.session.attach(machine)
    hello = rendezvous._expect(ch, deadline, rid, machine)
    if hello is None:
        return False
    assert isinstance(hello, Hello)
    mine = rendezvous.secrets.token_bytes(limits.NONCE_BYTES)
    sent = rendezvous.proof(secret, rendezvous.JOIN, hello.nonce, mine, rid)
    if not ch.send_bounded(Join(rid, mine, sent), deadline):
        raise SyncTimeoutError([rid], None, hint="the sender did not read the join (RDV-6)")
    # BUG: the sender "proves" the secret by showing the same HMAC the joiner sent
    machine.judge = lambda m: None if hmac.compare_digest(cast(Welcome, m).proof, sent) \
        else "the sender could not prove that it knows the secret"
    answer = rendezvous._expect(ch, deadline, rid, machine)
    if answer is None:
        return False
    if isinstance(answer, Refuse):
        raise RefusedError(f"receiver {rid}: the sender at {address.text} refused the join: {answer.detail} (RDV-4)")
    return True


rendezvous.Listener._advance = _advance
rendezvous._join = _join
