"""What a send may do, decided over the receivers' machines: its targets (SEND-4), a slot to write (SLOT-2,
SLOT-3), a receiver that reads too slowly (SEC-3). Pure, like the rest of the core; publishing.py asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from . import limits
from .protocol import PeerMachine


def unsendable(machines: Iterable[PeerMachine]) -> tuple[list[PeerMachine], list[int]]:
    """SEND-4 for a send's targets: those known to have failed or gone (their causes are raised), and the
    ids of those not connected yet (LocalProtocolError); a send with either consumes no version (VER-2)."""
    bad = []  # a loop, not a comprehension: this runs on every send
    for m in machines:
        if not m.live:
            bad.append(m)
    if not bad:
        return [], []
    return [m for m in bad if m.ended], sorted(m.id for m in bad if not m.ended)


def outbox_full(queued: int) -> bool:
    """SEC-3: a receiver that left more than the outbox limit unread holds a send back (bounded by its timeout)."""
    return queued > limits.OUTBOX_LIMIT


def free_slot(slots: Sequence[int], latest: int | None, pins: Iterable[Iterable[int]]) -> int | None:
    """The first slot nobody may read, or None (SLOT-2): not the latest, not pending, not held."""
    taken = {latest}
    for p in pins:
        taken.update(p)
    for s in slots:
        if s not in taken:
            return s
    return None


def readers(slot: int, machines: Iterable[PeerMachine]) -> list[int]:
    """The receivers that may read `slot` (SLOT-3 names them when none is free)."""
    return sorted(m.id for m in machines if slot in m.pins())


__all__ = ["unsendable", "outbox_full", "free_slot", "readers"]
