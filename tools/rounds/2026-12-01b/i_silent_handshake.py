"""Bug: a network (TCP) receiver starts its Heartbeats once it is live, not from the join on. The implementer
attached the lease and the heartbeat timer to the channel when the handshake ends (as the receiver's own lease on
the sender starts then) and took the handshake for a short exchange: Init in, Ready out. But on the network
profile the handshake includes building the data plane, taking the Init's transfer and applying it into the
target, which for a large model (or a slow target) outlasts the sender's lease, counted from the Init it sent:
the sender names the receiver gone ("lease expired") in the middle of its connect, and the trainer's
`connect()` raises ReceiverDiedError for a healthy worker. NET-4: each side sends Heartbeat whenever it has sent
nothing for its interval, "from the join on: a receiver's handshake included".
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("NET-4",)

from weightsync import limits as _limits  # noqa: E402
from weightsync import netplane as _netplane  # noqa: E402
from weightsync import pending as _pending  # noqa: E402


def setup(self, fds, deadline):
    """Builds the data plane and receives the Init's version; returns the buffer it is in (NET-2)."""
    assert self._init.data_plane is not None, "checked at construction"
    local = self._channel.sock.getsockname()[0]
    left = deadline.left()
    # THE BUG: no Heartbeats until Ready went out (was: self._beats.start() here, speaking through the handshake).
    try:
        self._net = net = _netplane.Inbound(self._init.data_plane, local,
                                            _limits.TRANSFER_TIMEOUT if left is None else left)
        b = net.receive_now(set())
    except BaseException:
        self._settled.set()
        raise
    self._mapped(b, net.buffers[b])
    return b


_pending.NetworkPending.setup = setup
