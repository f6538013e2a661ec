"""Bug: the listener reads a joining connection with the frame bound of a receiver's frames (WIRE-2: 64 KiB)
instead of the pre-proof bound of 8 KiB, so any process that can reach the address (no secret needed: an abstract
name or a TCP port is open to every local process, or to the network) has frames of up to 64 KiB read, held and
decoded before it has proved anything; a Join padded past 8 KiB is judged and answered (Refuse, or Welcome and the
Init with the whole manifest) instead of ending the connection. The implementer chose the bound by direction, as
WIRE-2 states it ("A frame that a receiver sends MUST NOT exceed 65,536 bytes"): a joiner is a receiver, and a Join
is a receiver's frame, and RDV-9's smaller bound was read as the joiner's own rule for what it accepts from a
possible squatter.

Breaks RDV-9 ("Until the other side has proved the secret, a side MUST NOT accept a frame whose length prefix
exceeds 8,192 bytes ... a joiner that knows no secret, gets no more than that read, decoded or held. A longer frame
is a violation that ends the join (... the sender closes that connection)").
"""
import secrets

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous, transport, wire  # noqa: F401
from weightsync.join import JoinMachine
from weightsync.messages import PROTOCOL_VERSION, Hello
from weightsync.transport import Channel

VIOLATES = ("RDV-9",)


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
        # BUG: a joiner is a receiver: its frames are bounded as a receiver's are (WIRE-2)
        ch = Channel(conn, allowed=wire.FROM_JOINER, max_in=wire.MAX_TO_SENDER, now=self.clock)
        joiner = rendezvous._Joiner(ch, secrets.token_bytes(limits.NONCE_BYTES), self.clock() + limits.JOIN_BOUND,
                                    JoinMachine(listener=True))
        ch.session.attach(joiner.machine)
        try:
            ch.send(Hello(PROTOCOL_VERSION, joiner.nonce))
        except transport.ChannelClosed:
            ch.close()
            continue
        self.pending.append(joiner)


rendezvous.Listener._accept = _accept
