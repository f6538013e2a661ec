"""Seams that more than one mutant patches, written once (not a mutant: names starting with `_` are not run)."""

from __future__ import annotations

from weightsync.hub import Hub


def every_peer_machine(cls: type) -> None:
    """Every receiver the sender makes from now on is kept by `cls`, a PeerMachine subclass carrying a bug.

    Seam: Hub.new_peer, which makes each receiver's PeerMachine; the machine's class is swapped after it.
    """
    new_peer = Hub.new_peer

    def mutated(self, i, group, pair=None):
        peer = new_peer(self, i, group, pair)
        peer.machine.__class__ = cls
        return peer

    Hub.new_peer = mutated
