"""Every number of the protocol, once, under the name the spec gives it, with the requirement that sets it.

Nothing else in the package writes a normative number: the core (protocol.py)
and the drivers read them from here. The spec's two timing words come first
(spec/README.md, "Time bounds"); the bounds of the wire follow (section 12),
then the rendezvous's (section 14), the sender's (sections 8 and 13), and the
network profile's defaults, which a caller may change (API-10).
"""

from __future__ import annotations

import math

# ---- the timing words of the spec ----

#: What "without waiting for the timeout" means: it happens within this many seconds (spec/README.md).
REACTION_BOUND = 10.0
#: How late after its timeout a call bounded by it may return (spec/README.md).
GRACE = 3.0

# ---- the wire (section 12) ----

#: A frame's length prefix: a 4-byte unsigned big-endian integer (WIRE-1).
LENGTH_BYTES = 4
#: The largest payload a receiver may send, and a sender may send (WIRE-2).
MAX_TO_SENDER = 64 * 1024
MAX_TO_RECEIVER = 64 * 1024 * 1024
#: The longest strings in UTF-8 bytes, the longest shape and ipc list, and the longest str or bin in it (WIRE-3).
MAX_DETAIL = 4096
MAX_TEXT = 4096
MAX_DIMS = 64
MAX_IPC = 16
MAX_IPC_BYTES = 4096
#: The largest integer a field holds (WIRE-3: [0, 2**63)).
INT_MAX = 2**63 - 1
#: How long a peer may take to finish a frame it has started (WIRE-7): the reaction bound.
FRAME_BOUND = REACTION_BOUND

#: Heartbeats a peer may send (the only frames it sends unasked): a burst of this many, refilled at this
#: many a second; more is a violation (SEC-8), so one peer's legal-looking flood cannot starve the others.
HEARTBEAT_BURST = 64
HEARTBEAT_RATE = 64.0

# ---- rendezvous (section 14) ----

#: How long a joiner has to answer Hello with Join (RDV-6): the reaction bound.
JOIN_BOUND = REACTION_BOUND
#: The largest frame either side of a join accepts before the other has proved the secret (RDV-9): Hello,
#: Join, Welcome and Refuse (a detail of at most 4,096 bytes) fit; a squatter gets no more than this read.
MAX_BEFORE_PROOF = 8 * 1024
#: Joins under way at once; one more drops the oldest (RDV-6, the reference's choice).
MAX_PENDING_JOINS = 64
#: The size of each side's challenge (RDV-3) and of a receiver's secret (RDV-1, RDV-2).
NONCE_BYTES = 32
SECRET_BYTES = 32

# ---- the sender (sections 8 and 13) ----

#: After a send's first failure, how long a wait still collects the other targets' answers (SEND-7).
SETTLE_WINDOW = 1.0
#: A slot above this many bytes is kept at most LARGE_SLOT_COPIES times by default (SLOT-3).
LARGE_SLOT = 1 << 30
LARGE_SLOT_COPIES = 3
#: Bytes of frames queued for one receiver before a send waits for it to read (SEC-3).
OUTBOX_LIMIT = 1 << 20
#: How long a side waits for its peer to take an answer before it treats the peer as gone (SEC-3).
WRITE_BOUND = REACTION_BOUND
#: Polls a wait makes without sleeping, the core yielded between them, before it sleeps (a fraction of a
#: millisecond): a small model's next message comes within that, and a process woken on an idle core of a
#: virtual machine takes tens of microseconds more than one that never slept (polling.Spin).
SPIN_POLLS = 400
#: The longest a spin lasts: 400 polls take under a millisecond on an idle core, and seconds where every yield
#: gives the core to a busy process for its time slice.
SPIN_SECONDS = 0.002
#: Waits that sleep at once after a spin that found nothing (polling.Spin): a worker whose versions come
#: milliseconds or more apart spins before one wait in seventeen.
SPIN_REST = 16
#: How long receiver.close() waits for an apply in progress: well inside LIFE-5's reaction bound.
CLOSE_WAIT = REACTION_BOUND / 2

# ---- the network profile's defaults (section 15; a caller may choose others, API-10) ----

#: How long a side waits on a silent peer before it treats the channel as ended (NET-4).
LEASE = 5.0
#: How long a side stays silent before it sends Heartbeat (NET-4): a receiver also at most a fifth of the lease.
HEARTBEAT = 1.0
#: The bound of one transfer, and of the wait for a receiver's data plane (NET-3, NET-5).
TRANSFER_TIMEOUT = 60.0
#: Keys a receiver may leave in its own data-plane store before `joined` is seen; gloo's rendezvous writes two (NET-6).
MAX_STORE_KEYS = 64


def receiver_heartbeat(lease: float) -> float:
    """How often a network receiver speaks under a sender's lease (NET-4: at most a fifth of it)."""
    return min(HEARTBEAT, lease / 5)


def network_times(lease: float = LEASE, heartbeat: float = HEARTBEAT,
                  transfer_timeout: float = TRANSFER_TIMEOUT) -> tuple[float, float, float]:
    """The network profile's times a caller chose, checked (API-10): ValueError for any that is not allowed."""
    for name, value in (("lease", lease), ("heartbeat", heartbeat), ("transfer_timeout", transfer_timeout)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r} (API-10)")
    if heartbeat >= lease:
        raise ValueError(f"heartbeat ({heartbeat} s) must be less than lease ({lease} s), or a quiet receiver "
                         "would lose its lease (API-10, NET-4)")
    return float(lease), float(heartbeat), float(transfer_timeout)
