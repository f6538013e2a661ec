"""Mutant (from the outside round of 2026-12-01d, where it survived): Once 64 joins are under way, the listener turns
each new connection away (accepts it and closes it at once, before Hello) instead of dropping the oldest join under
way. The implementer bounded the joins as a server bounds its backlog ("MAY bound the joins under way at once"),
keeping the connections it already has and refusing the newcomer, the usual choice for a full accept queue. But then
64 silent connections from any local process (no secret needed) keep every real worker out for as long as the flood
lasts: each joiner's tries are closed before Hello until its connect() times out, and the flooder reconnects every
10 s. Breaks RDV-6 ("a connection beyond the bound MUST end an older join under way, never itself, so that a flood
of silent connections cannot keep a receiver out"; the spec said it as the reference's choice when this bug was
written, and says it as a MUST since).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, limits, rendezvous, transport, wire  # noqa: F401
from weightsync.join import JoinMachine
from weightsync.messages import PROTOCOL_VERSION, Hello

VIOLATES = ("RDV-6",)
KILLED_BY = ("conformance/test_rendezvous.py::test_silent_connections_do_not_keep_a_receiver_out",)


def _accept(self):
    for _ in range(rendezvous._ACCEPTS_PER_PASS):
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if len(self.pending) >= limits.MAX_PENDING_JOINS:  # BUG: the newcomer is turned away, the oldest kept
            conn.close()
            continue
        ch = transport.Channel(conn, allowed=wire.FROM_JOINER, max_in=limits.MAX_BEFORE_PROOF, now=self.clock)
        joiner = rendezvous._Joiner(ch, rendezvous.secrets.token_bytes(limits.NONCE_BYTES),
                                    self.clock() + limits.JOIN_BOUND, JoinMachine(listener=True))
        ch.session.attach(joiner.machine)
        try:
            ch.send(Hello(PROTOCOL_VERSION, joiner.nonce))
        except transport.ChannelClosed:
            ch.close()
            continue
        self.pending.append(joiner)


rendezvous.Listener._accept = _accept
