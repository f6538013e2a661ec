"""Mutant: a receiver joining by URL lifts the 8 KiB bound on frames before the proof to the bound of a sender's
frames as soon as it sent its Join, before it checked the Welcome's proof; a listener at its address that announces
a 1 MiB frame in place of the Welcome and stalls holds its connect() until WIRE-7's frame bound. Violates RDV-9 and
RDV-7 (a joiner checks the Welcome's proof before it reads anything further). From a twelfth outside round.

Seam: rendezvous._join.
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
KILLED_BY = ("conformance/test_receiver_wire.py::test_a_large_frame_in_place_of_the_welcome_ends_the_join_at_once",)


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
