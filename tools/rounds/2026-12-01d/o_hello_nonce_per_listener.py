"""Bug: the listener draws its Hello challenge once, when it starts listening, beside the master secret, and sends
the same nonce in the Hello of every connection. The implementer read "Hello(protocol, nonce_s)" as the sender's
challenge, one per sender as the master secret is, and took the joiner's fresh nonce as what makes each proof
unique. Every join works, but a Join seen once (over TCP nothing is encrypted, 15.4) can be replayed byte for
byte on a new connection, without the secret, for as long as the sender lives: the replayer is welcomed as
receiver i and takes its place (or, while i is live, keeps a restarted worker out).

Breaks RDV-3 ("each sends a fresh random challenge"; "the sender first sends Hello (protocol, nonce: 32 random
bytes)") and RDV-4/RDV-2 (a process without receiver i's secret is welcomed as i).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous, transport, wire  # noqa: F401
from weightsync.join import JoinMachine
from weightsync.messages import PROTOCOL_VERSION, Hello

VIOLATES = ("RDV-3", "RDV-4", "RDV-2")

_plain_init = rendezvous.Listener.__init__


def __init__(self, listen, num_workers, clock=rendezvous.monotonic):
    _plain_init(self, listen, num_workers, clock)
    self.nonce = rendezvous.secrets.token_bytes(limits.NONCE_BYTES)  # BUG: the sender's challenge, drawn once


def _accept(self):
    for _ in range(rendezvous._ACCEPTS_PER_PASS):
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if len(self.pending) >= limits.MAX_PENDING_JOINS:
            self.pending.pop(0).channel.close()
        ch = transport.Channel(conn, allowed=wire.FROM_JOINER, max_in=limits.MAX_BEFORE_PROOF, now=self.clock)
        joiner = rendezvous._Joiner(ch, self.nonce,  # BUG: the listener's one nonce, not a fresh one per connection
                                    self.clock() + limits.JOIN_BOUND, JoinMachine(listener=True))
        ch.session.attach(joiner.machine)
        try:
            ch.send(Hello(PROTOCOL_VERSION, joiner.nonce))
        except transport.ChannelClosed:
            ch.close()
            continue
        self.pending.append(joiner)


rendezvous.Listener.__init__ = __init__
rendezvous.Listener._accept = _accept
