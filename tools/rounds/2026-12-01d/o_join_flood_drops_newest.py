"""Bug: once 64 joins are under way, the listener turns each new connection away (accepts it and closes it at
once, before Hello) instead of dropping the oldest join under way. The implementer bounded the joins as a server
bounds its backlog ("MAY bound the joins under way at once"), keeping the connections it already has and refusing
the newcomer, the usual choice for a full accept queue. But then 64 silent connections from any local process (no
secret needed) keep every real worker out for as long as the flood lasts: each joiner's tries are closed before
Hello until its connect() times out, and the flooder reconnects every 10 s.

Breaks RDV-6 ("A listening sender accepts joins from its creation until close() ... a connection beyond the bound
drops the oldest join under way, so that a flood of silent connections cannot keep a receiver out") and section
14.3 ("a flood of connections is bounded").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous, transport, wire  # noqa: F401
from weightsync.join import JoinMachine
from weightsync.messages import PROTOCOL_VERSION, Hello

VIOLATES = ("RDV-6",)


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
