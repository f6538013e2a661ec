"""Bug: a receiver joining by URL lifts the pre-proof frame bound (8 KiB) to the bound of the sender's frames (64
MiB) as soon as it has sent its Join, not once it has checked the Welcome's proof. Whoever answers at the address,
a process squatting on an abstract name or a port taken first, without any secret, can then announce a frame of up
to 64 MiB before its Welcome is judged: the joiner waits for it and reads it (its `connect()` hangs on a stalled
frame until its timeout or WIRE-7's 10 s, or takes in tens of megabytes) instead of refusing the length at once.
The implementer read RDV-9's "Until the other side has proved the secret" from its own side of the exchange: the
proof is the joiner's Join, and once the joiner has proved the secret the join is authenticated and "Once the proof
is checked ... WIRE-2's bounds apply".

Breaks RDV-9 ("Until the other side has proved the secret, a side MUST NOT accept a frame whose length prefix
exceeds 8,192 bytes: ... a process that squats on the sender's address ... gets no more than that read, decoded or
held. A longer frame is a violation that ends the join (the receiver's `connect()` raises RemoteProtocolError ...)")
and RDV-7 ("A joiner MUST check Welcome's proof before it reads anything further").
"""
import hmac
import secrets
from typing import cast

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous, wire  # noqa: F401
from weightsync.errors import RefusedError, SyncTimeoutError
from weightsync.join import JoinMachine
from weightsync.messages import Hello, Join, Refuse, Welcome

VIOLATES = ("RDV-9", "RDV-7")


def _join(ch, address, rid, secret, deadline):
    machine = JoinMachine(listener=False)
    ch.session.attach(machine)
    hello = rendezvous._expect(ch, deadline, rid, machine)
    if hello is None:
        return False
    assert isinstance(hello, Hello), "the join table lets only Hello through first"
    mine = secrets.token_bytes(limits.NONCE_BYTES)
    if not ch.send_bounded(Join(rid, mine, rendezvous.proof(secret, rendezvous.JOIN, hello.nonce, mine, rid)), deadline):
        raise SyncTimeoutError([rid], None, hint="the sender did not read the join (RDV-6)")
    ch.session._reader.max_frame = wire.MAX_TO_RECEIVER  # BUG: our proof is sent: the join is authenticated
    machine.judge = lambda m: None if hmac.compare_digest(
        cast(Welcome, m).proof, rendezvous.proof(secret, rendezvous.WELCOME, hello.nonce, mine, rid)) \
        else "the sender could not prove that it knows the secret"
    answer = rendezvous._expect(ch, deadline, rid, machine)
    if answer is None:
        return False
    if isinstance(answer, Refuse):
        raise RefusedError(f"receiver {rid}: the sender at {address.text} refused the join: {answer.detail} (RDV-4)")
    return True


rendezvous._join = _join
