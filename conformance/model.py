"""The suite's own model of the spec, written from the spec and not from any implementation.

Two encodings of the protocol that must agree are worth more than one: this
module says what a conforming implementation is allowed to show through the
binding after each step; the tests compare that with what the implementation
under test does. It knows nothing of slots, messages or threads.

Bytes are compared bit for bit (ACK-3): a tensor is reduced to its raw bytes,
so NaN payloads, signed zeros and bf16 values compare exactly.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import torch

# The sender's view of a receiver (SM-S): the states the binding lets us know about.
UNCONNECTED, LIVE, FAILED, GONE, STOPPED = "unconnected", "live", "failed", "gone", "stopped"


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The raw bytes of `t` in row-major order (bit-for-bit comparison, ACK-3)."""
    t = t.detach().to("cpu").contiguous()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).clone().numpy().tobytes()


def describe(weights) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """Name -> (dtype, shape, bytes) of a mapping of tensors."""
    return {
        name: (str(t.dtype).removeprefix("torch."), tuple(t.shape), tensor_bytes(t)) for name, t in weights.items()
    }


def digest(described: dict) -> str:
    """A short fingerprint of a described version (used by readers under load, CONS-1)."""
    h = hashlib.blake2b(digest_size=12)
    for name in sorted(described):
        dtype, shape, data = described[name]
        h.update(f"{name}|{dtype}|{shape}|{len(data)}|".encode())
        h.update(data)
    return h.hexdigest()


@dataclass
class Peer:
    """What the model knows of one receiver."""

    id: int
    mode: str = "push"
    state: str = UNCONNECTED
    #: The newest version whose ok ack the sender reported (a send or wait returned it), or the
    #: Init's version; None after an error ack (ACK-6) and before connect.
    acked: int | None = None
    #: Versions published to this receiver and not yet known to be acked: the receiver may hold
    #: any of them at a given moment (push mode applies in the background; ACK-2).
    pending: set[int] = field(default_factory=set)
    #: Versions whose apply failed at this receiver (its weights are undefined after, ACK-6).
    broken: bool = False
    #: Which process plays receiver `id`: a restart starts a new incarnation, and nothing
    #: learnt about an older one (its futures, acks, errors) may be applied to it.
    epoch: int = 0
    #: The receiver object's own lifecycle as its process sees it (SM-R):
    #: none | new | live | stopped (after sender.close(), once it shows stopped) | closed.
    local: str = "none"
    #: An apply may have failed without the suite seeing its error ack: None is allowed too (ACK-6).
    maybe_failed: bool = False
    #: Gone, and the sender has shown it knows (an error named it died, or it was dropped): until
    #: then the sender may not have read its end of channel yet, and a send may still publish (SEND-3).
    seen_gone: bool = False
    #: Gone because the sender's caller dropped it (API-9): the sender must treat it as dead.
    dropped: bool = False


class Model:
    """Versions, published bytes and per-receiver expectations (VER-*, ACK-*, SEND-*, LIFE-*)."""

    def __init__(self, initial: dict, num_workers: int):
        self.published: dict[int, dict] = {0: initial}
        self.digests: dict[int, str] = {0: digest(initial)}
        self.version = 0
        self.peers = [Peer(i) for i in range(num_workers)]
        self.closed = False

    # ---- transitions ---------------------------------------------------------

    def publish(self, described: dict, targets: list[int]) -> int:
        """A send that got past every check: version + 1 (VER-1), pending at each target."""
        self.version += 1
        self.published[self.version] = described
        self.digests[self.version] = digest(described)
        for i in targets:
            self.peers[i].pending.add(self.version)
        return self.version

    def connected(self, i: int, version: int, mode: str) -> None:
        """A receiver whose handshake succeeded holds the latest version (LIFE-1, INIT-4)."""
        p = self.peers[i]
        p.state, p.mode, p.acked, p.pending, p.broken, p.local = LIVE, mode, version, set(), False, "live"

    def acked(self, i: int, version: int) -> None:
        """An ok ack of `version` also answers every older pending version (ACK-2)."""
        p = self.peers[i]
        if p.acked is None or version >= p.acked:
            p.acked = version
            p.broken = False
        p.pending = {v for v in p.pending if v > version}

    def failed_apply(self, i: int, version: int) -> None:
        """An error ack: the receiver's version is None until its next ok ack (ACK-6)."""
        p = self.peers[i]
        p.acked, p.broken = None, True
        p.pending = {v for v in p.pending if v > version}

    def gone(self, i: int, *, seen: bool = False) -> None:
        p = self.peers[i]
        p.state, p.pending, p.seen_gone = GONE, set(), p.seen_gone or seen

    def seen_dead(self, ids) -> None:
        """The sender reported these receivers died: it knows they are gone."""
        for i in ids:
            if self.peers[i].state == GONE:
                self.peers[i].seen_gone = True

    def reset(self, i: int) -> None:
        """A new handle for a failed or gone receiver (SM-S-5): a new incarnation."""
        self.peers[i] = Peer(i, epoch=self.peers[i].epoch + 1)

    def epochs(self, targets) -> dict[int, int]:
        """The incarnation of each target now, to tell later which one an outcome concerns."""
        return {i: self.peers[i].epoch for i in targets}

    def same(self, i: int, epoch: int) -> bool:
        return self.peers[i].epoch == epoch

    def expected_observation(self, i: int) -> dict:
        """What receiver i's own object must show for stopped and closed (LIFE-7, LIFE-6, SM-R)."""
        local = self.peers[i].local
        return {
            "stopped": local in ("stopped", "closed"),
            "closed": local == "closed",
        }

    # ---- expectations ----------------------------------------------------------

    def unusable(self, targets: list[int]) -> dict[int, str]:
        """Targets a send must refuse before publishing (SEND-4, VER-2): id -> state."""
        return {i: self.peers[i].state for i in targets if self.peers[i].state != LIVE}

    def allowed_versions(self, i: int) -> set[int | None]:
        """Versions receiver `i` may show right now (ACK-3 with ACK-2's latitude)."""
        p = self.peers[i]
        out: set[int | None] = set(p.pending)
        if p.mode == "pull":
            # Pull mode applies only inside poll() (CONS-3): nothing moves on its own.
            out = set()
        out.add(p.acked)
        if p.maybe_failed:
            out.add(None)
        return out

    def check_snapshot(self, i: int, version: int | None, described: dict | None) -> str | None:
        """None when (version, bytes) is something receiver `i` may show, else the violation."""
        allowed = self.allowed_versions(i)
        if version not in allowed:
            which = "CONS-3" if self.peers[i].mode == "pull" and version in self.peers[i].pending else "ACK-3"
            return (
                f"{which} violated: receiver {i} reports version {version}, but the model allows only "
                f"{sorted(allowed, key=lambda v: -1 if v is None else v)} (acked {self.peers[i].acked})"
            )
        if version is None or described is None:
            return None
        expected = self.published[version]
        if described != expected:
            return f"ACK-3 violated: receiver {i} holds version {version}, but its bytes differ from what was published as version {version}: {diff(expected, described)}"
        return None


def misnamed(causes: dict[int, str], at_fault: dict[str, set[int]]) -> dict[int, str]:
    """The receivers an error names with a cause they are not at fault for: id -> cause (SEND-7).

    One error may carry several causes (a receiver dropped, another silent past the timeout), so each
    named receiver is judged by its own cause, never by the error's class alone."""
    return {i: c for i, c in causes.items() if i not in at_fault.get(c, ())}


def diff(expected: dict, got: dict) -> str:
    """A short account of how two described versions differ."""
    if set(expected) != set(got):
        return f"names {sorted(got)} instead of {sorted(expected)}"
    for name in sorted(expected):
        e, g = expected[name], got[name]
        if e[:2] != g[:2]:
            return f"{name!r} is {g[0]}{list(g[1])}, expected {e[0]}{list(e[1])}"
        if e[2] != g[2]:
            return f"{name!r} bytes {g[2][:16].hex()}... instead of {e[2][:16].hex()}..."
    return "no difference"
