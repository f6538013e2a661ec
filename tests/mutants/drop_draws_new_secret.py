"""Mutant (from the outside round of 2026-12-01d, where it survived): `sender.drop(i)` on a listening sender draws a
new secret for receiver i, so that the process it cut off (alive, stuck, maybe about to wake up) cannot join again
with the URL it holds. The implementer read API-9's "cuts receiver i off" as a security step and made it stick, as
one revokes a credential: each receiver's secret is derived with an epoch that drop() advances. But the secret is
fixed for the sender's life, and a restart is a new process given *the same URL*: every restarted worker (a
scheduler relaunching it with its URL in the environment, as 14.1 suggests) is refused with RefusedError, and
`connect(workers=[i])` waits for it until its timeout. Breaks RDV-2 ("Each receiver has its own secret, fixed for
the sender's life"), RDV-5 ("A valid Join for a receiver that is ... gone takes its place ... A restart is therefore
a new process given the same URL") and API-9 ("`handle(i)` or its URL restarts it").
"""

import hashlib
import hmac

from weightsync import *
from weightsync import CAPABILITIES, __all__, options, rendezvous  # noqa: F401
from weightsync.clock import Deadline
from weightsync.sender import Sender

VIOLATES = ("RDV-2", "RDV-5", "API-9")
KILLED_BY = ("conformance/test_rendezvous.py::test_a_url_restarts_its_receiver_whatever_ended_it_and_a_restart_that_refuses_is_named_at_once[dropped]",)

#: master secret -> {receiver id: epoch}; an epoch moves on each time the trainer drops that receiver.
_EPOCHS: dict[bytes, dict[int, int]] = {}


def secret_for(master: bytes, rid: int) -> bytes:
    epoch = _EPOCHS.get(master, {}).get(rid, 0)
    label = b"weightsync receiver %d" % rid + (b" epoch %d" % epoch if epoch else b"")
    return hmac.new(master, label, hashlib.sha256).digest()


def drop(self, i, timeout=None):
    hub = self._hub
    deadline = Deadline(timeout, hub.clock)
    with hub.locked(deadline):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        with hub.quiet(deadline):
            if peer.machine.active:
                hub.drop(peer, "dropped by the trainer: sender.drop() (API-9)")
                if hub.listener is not None:
                    # BUG: revoke the cut-off process's credential: its old URL must not let it back in.
                    epochs = _EPOCHS.setdefault(hub.listener.master, {})
                    epochs[peer.machine.id] = epochs.get(peer.machine.id, 0) + 1


rendezvous.secret_for = secret_for
Sender.drop = drop
