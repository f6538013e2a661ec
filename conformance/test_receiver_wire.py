"""A receiver in any language against the suite's scripted sender (spec sections 5, 6, 9, 12 and 14).

The scripted sender (peers.ScriptedSender) listens, runs the join, writes the
slots and the frames by hand. The receiver under test is either the binding's
Receiver in a worker process, or an outside program given with
`--receiver-cmd "PROGRAM {url}"` that follows the test-control contract of
docs/conformance.md: it prints `applied VERSION SHA256` for each version it
holds and `stopped` when no version can come any more. Only what travels on
the wire and those lines are judged, so a receiver written in C, Rust or over
NumPy is held to exactly what the reference is.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import shlex
import subprocess
import sys
import time

import pytest

from . import timing as tm
from .clauses import occurred
from .peers import (
    HEARTBEAT,
    ITEMSIZE,
    MAX_TO_RECEIVER,
    PeerClosed,
    ScriptedSender,
    code_payload,
    frame,
    handles_listed,
    init,
    layout,
    loose,
    pack,
    padded,
    slotinfo,
    with_odd_fields,
    with_repeated_key,
    without_optional,
)
from .verdict import HarnessError, TooSlow, checked_nothing, in_time
from .wire_schema import negatives

#: The binding's Receiver here joins the scripted sender by URL and speaks the wire profile in push mode
#: (a receiver program, --receiver-cmd, is judged by its wire alone: program mode runs these whatever it declares).
pytestmark = pytest.mark.needs("wire", "rendezvous", "push")


def answer_bound() -> float:
    """How long a receiver program may take to answer."""
    return 30.0 * tm.SCALE


def start_bound() -> float:
    """How long it may take to start and connect: a first run in a fresh environment imports (and
    compiles) a framework, on a loaded machine. A harness bound, not a requirement's."""
    return 60.0 * tm.SCALE


#: One array of every dtype of Table 12-2: empty, 0-d and multi-dimensional shapes.
ARRAYS = [("b", "bool", (3, 5)), ("i8", "int8", (7,)), ("i16", "int16", (2, 3)), ("i32", "int32", ()),
          ("i64", "int64", (4, 1)), ("u8", "uint8", (0, 3)), ("f16", "float16", (3, 3)), ("bf16", "bfloat16", (5,)),
          ("f32", "float32", (2, 2, 2)), ("f64", "float64", (3,)), ("c64", "complex64", (2,)),
          ("c128", "complex128", (1, 2))]


def arrays(seed: int):
    """(name, dtype, shape, raw bytes) of one version: arbitrary bytes (NaN payloads included), bool 0 or 1.

    Made without any array library, so a receiver program is tested without torch here."""
    rnd = random.Random(seed)
    out = []
    for name, dtype, shape in ARRAYS:
        n = math.prod(shape)
        raw = bytes(rnd.randrange(2) for _ in range(n)) if dtype == "bool" else rnd.randbytes(n * ITEMSIZE[dtype])
        out.append((name, dtype, shape, raw))
    return out


def digest(arrs) -> str:
    return hashlib.sha256(b"".join(raw for *_, raw in arrs)).hexdigest()


class Subject:
    """The receiver under test, following one scripted sender until it stops."""

    def __init__(self, request):
        self.cmd = request.config.getoption("--receiver-cmd")
        self.request = request
        self.proc = None
        self.worker = None

    def start(self, url: str, bound: float | None = None) -> None:
        bound = answer_bound() if bound is None else bound
        if self.cmd:
            argv = [a.replace("{url}", url) for a in shlex.split(self.cmd)]
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        else:  # the binding's Receiver in one of the pool's processes (started only in this mode)
            self.worker = self.request.getfixturevalue("pool").get(1)[0]
            self.worker.submit("follow", url, "push", bound)

    def finish(self, bound: float | None = None) -> dict:
        """{"applied": [(version, sha256)], "stopped": bool, "error": text or None, "kinds": the binding's error
        classes the error is an instance of (None for a program, which prints only text)}."""
        bound = answer_bound() if bound is None else bound
        if self.worker is not None:
            status, value = self.worker.result(bound + tm.SLACK)
            assert status == "ok", f"the receiver's worker failed: {value}"
            error = value["error"]
            value["kinds"] = () if error is None else (*error.kinds, error.type)
            value["error"] = None if error is None else str(error)
            return value
        try:
            out, _ = self.proc.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise TooSlow(f"LIFE-7 violated: the receiver program did not exit within {bound:.0f} s of the end of "
                          "the test (after 'stopped' or 'error' it must exit on its own)") from None
        lines = out.splitlines()
        errors = [line[6:] for line in lines if line.startswith("error ")]
        return {"applied": _applied(out), "stopped": "stopped" in lines, "error": errors[0] if errors else None,
                "kinds": None}

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _applied(out: str):
    return [(int(p[1]), p[2]) for p in (line.split() for line in out.splitlines()) if len(p) == 3 and p[0] == "applied"]


@pytest.fixture
def subject(request):
    s = Subject(request)
    yield s
    s.close()


@pytest.fixture
def sender():
    s = ScriptedSender()
    yield s
    s.close()


#: Ready's fields (Table 12-1); WIRE-5: an encoder writes every one, `capabilities` included.
READY_FIELDS = {"type", "receiver", "version", "status", "detail", "holds_slot", "protocol", "capabilities"}


def _handshake(sender, subject, arrs, *, version=0, rid=0, protocol="1.1", check=True, byteorder=None, gap=0,
               extra=None, spare=0):
    """Init(version) with slot 0 holding `arrs` (and `spare` bytes past the slot's usual size), Ready read."""
    subject.start(sender.url(rid))
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrs, gap)
    fd = sender.slot(0, data, nbytes + spare, rewritable=bool(gap))
    msg = init(rid, manifest, [slotinfo(0, nbytes + spare)], version, 0, protocol=protocol)
    if byteorder is not None:
        msg["byteorder"] = byteorder
    msg.update(extra or {})
    session.send(msg, fds=[fd])
    if check:
        ready, _ = _expect(session, "Ready", "INIT-4")
        assert ready["status"] == "ok" and ready["version"] == version, f"INIT-4 violated: Ready is {ready}"
        missing = READY_FIELDS - set(ready)
        assert not missing, f"MSG-1, WIRE-5 violated: Ready(ok) leaves out {sorted(missing)} (every field is written)"
        session.ready = ready
    return session, manifest, nbytes


def _expect(session, kind: str, ids: str):
    """The next frame other than Heartbeat, which must be a `kind`; no frame in time is a matter of time blamed
    on `ids`. A Heartbeat from the receiver is passed over: a peer MAY send one on any channel (MSG-4)."""
    try:
        msg, fds = session.recv_past_heartbeats(answer_bound())
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: no {kind} from the receiver: {e}") from None
    except (PeerClosed, ConnectionResetError):
        raise AssertionError(f"{ids} violated: the receiver closed its channel where a {kind} was due") from None
    assert msg.get("type") == kind, f"expected {kind}, got {msg}"
    return msg, fds


def _closes(session, what: str, bound: float | None = None, rule: str | None = None):
    """The receiver closes its channel after a violation by the sender (SM-R-7; `rule`: the one broken)."""
    bound = tm.REACTION + tm.SLACK if bound is None else bound
    ids = "SM-R-7" if rule is None else f"{rule}, SM-R-7"
    in_time(session.closed_by_peer(bound), f"{ids} violated: the receiver kept the channel open {bound:.0f} s after {what}")


#: Ack's fields (Table 1, Table 12-1); MSG-1: a receiver's Ack carries every one.
ACK_FIELDS = ("type", "receiver", "version", "status", "detail")


def _check_ack_fields(ack: dict, rid: int) -> None:
    """MSG-1: an Ack carries receiver, version, status and detail; its receiver is the one the Init named (MSG-2)."""
    missing = [f for f in ACK_FIELDS if f not in ack]
    assert not missing, f"MSG-1 violated: an Ack leaves out {missing}: {ack!r:.200}"
    assert ack["receiver"] == rid and isinstance(ack["detail"], str), (
        f"MSG-1, MSG-2 violated: receiver {rid}'s Ack is {ack!r:.200} (its own id, a detail string)")


@pytest.mark.req("INIT-4", "ACK-1", "ACK-2", "ACK-3", "SLOT-1", "WIRE-8", "WIRE-5", "WIRE-4", "SM-R-3", "LIFE-7",
                  "RDV-3", "MSG-1", "WIRE-1")
def test_versions_arrive_bit_for_bit_and_are_acked(sender, subject):
    """Every frame the receiver writes is parsed as one frame of one message (WIRE-1), each Ack with its four
    fields (MSG-1), and compared with its canonical re-encoding (WIRE-5)."""
    v0 = arrays(0)
    session, manifest, nbytes = _handshake(sender, subject, v0)
    v1 = arrays(1)
    fd1 = sender.slot(1, layout(v1)[1], nbytes)
    session.send({"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, nbytes)]}, fds=[fd1])
    ack, _ = _expect(session, "Ack", "ACK-1")
    _check_ack_fields(ack, 0)
    assert (ack["version"], ack["status"]) == (1, "ok"), f"ACK-1 violated: {ack}"
    v2, v3 = arrays(2), arrays(3)
    fd2 = sender.slot(2, layout(v2)[1], nbytes)
    fd3 = sender.slot(3, layout(v3)[1], nbytes)
    for v, fd in ((2, fd2), (3, fd3)):  # back to back, each frame with its own handle (WIRE-4)
        session.send({"type": "Receive", "version": v, "slot": v, "new_slots": [slotinfo(v, nbytes)]}, fds=[fd])
    acked = []
    while not acked or acked[-1] < 3:
        try:
            ack, _ = session.recv_past_heartbeats(answer_bound())
        except (HarnessError, PeerClosed, ConnectionResetError):
            _applied_unacked(session, subject, 3, acked)
        assert ack.get("type") == "Ack", f"ACK-1 violated: expected an Ack, got {ack}"
        _check_ack_fields(ack, 0)
        assert ack["status"] == "ok" and ack["version"] in (2, 3) and ack["version"] not in acked, f"ACK-2 violated: {ack}"
        acked.append(ack["version"])
    session.send({"type": "Stop"})
    out = subject.finish()
    published = {0: digest(v0), 1: digest(v1), 2: digest(v2), 3: digest(v3)}
    assert out["applied"], f"INIT-4 violated: the receiver reported no version ({out['error']})"
    for v, d in out["applied"]:
        assert published.get(v) == d, f"ACK-3 violated: the receiver holds version {v} with other bytes than published"
    assert out["applied"][-1][0] == 3, f"ACK-3 violated: the receiver ends at {out['applied'][-1][0]}, not 3"
    assert out["stopped"], "LIFE-7 violated: after Stop the receiver does not say it stopped"
    for payload in session.frames_in:
        from .peers import canonical

        assert payload == canonical(payload), "WIRE-5 violated: a frame from the receiver is not canonical"


@pytest.mark.req("ACK-1", "ACK-3", "VER-3", "WIRE-8", "LAYOUT-1", "SLOT-1", "LIFE-7")
def test_skipped_numbers_a_reused_slot_and_padding_between_arrays_change_nothing(sender, subject):
    """What a legal sender may do: leave padding of any content between arrays (the offsets are the manifest's,
    LAYOUT-1, WIRE-8), skip version numbers (VER-3 asks only that they grow), and write a newer version into a
    slot the receiver read an older one from, the last one included (a copying receiver holds no slot once it
    acked; a zero-copy one gets only slots it does not hold). Each version is acked ok and held bit for bit."""
    v0 = arrays(0)
    session, manifest, nbytes = _handshake(sender, subject, v0, gap=128)
    holds = session.ready["holds_slot"] is True
    data = {v: layout(arrays(v), 128)[1] for v in (3, 4, 9, 10)}
    published = {0: digest(v0)} | {v: digest(arrays(v)) for v in data}
    fd = sender.slot(1, data[3], nbytes, rewritable=True)
    session.send({"type": "Receive", "version": 3, "slot": 1, "new_slots": [slotinfo(1, nbytes)]}, fds=[fd])
    _acked(session, subject, 3, published)
    # 4 and 9 into slot 0, one after the other; 10 into slot 1. A zero-copy receiver holding slot 0 at 4 gets 9
    # in slot 1 and 10 in slot 0 instead.
    plan = [(4, 0), (9, 0), (10, 1)] if not holds else [(4, 0), (9, 1), (10, 0)]
    for v, sid in plan:
        sender.rewrite(sid, data[v])
        session.send({"type": "Receive", "version": v, "slot": sid, "new_slots": []})
        _acked(session, subject, v, published)
    session.send({"type": "Stop"})
    out = subject.finish()
    for v, d in out["applied"]:
        assert published.get(v) == d, (
            f"ACK-3 violated: the receiver holds version {v} with other bytes than published (arrays at the "
            "manifest's offsets, padding between them, versions 3, 4, 9 and 10, slots reused)"
        )
    assert [v for v, _ in out["applied"]][-1:] == [10], f"ACK-3 violated: the receiver ends at {out['applied']}"
    assert out["stopped"], "LIFE-7 violated: after Stop the receiver does not say it stopped"


@pytest.mark.req("LAYOUT-1", "ACK-1", "ACK-3", "SLOT-1")
def test_slots_of_other_sizes_than_the_init_s_are_applied(sender, subject):
    """A slot's size is at least the end of its last array, and a receiver accepts any size that holds every array
    of the manifest (LAYOUT-1): slots introduced after the Init may be smaller than its slot (the exact end of the
    arrays) or larger (a sender that sized them for another layout). Each version is acked ok and held bit for bit;
    a receiver that copies a slot whole into a buffer sized like the Init's fails the copy."""
    v0 = arrays(0)
    session, manifest, nbytes = _handshake(sender, subject, v0, spare=4096)
    end = max(e["offset"] + e["nbytes"] for e in manifest)
    published = {v: digest(arrays(v)) for v in (0, 1, 2)}
    for v, size in ((1, end), (2, nbytes + 3 * 4096)):
        fd = sender.slot(v, layout(arrays(v))[1], size)
        session.send({"type": "Receive", "version": v, "slot": v, "new_slots": [slotinfo(v, size)]}, fds=[fd])
        try:
            _acked(session, subject, v, published)
        except AssertionError as e:
            raise AssertionError(f"LAYOUT-1 violated: version {v} in a slot of {size} bytes (the Init's: "
                                 f"{nbytes + 4096}; the arrays end at {end}) was not applied: {e}") from None
    session.send({"type": "Stop"})
    out = subject.finish()
    for v, d in out["applied"]:
        assert published.get(v) == d, (
            f"ACK-3 violated: the receiver holds version {v} with other bytes than published (slots of "
            f"{nbytes + 4096}, {end} and {nbytes + 3 * 4096} bytes)")
    assert [v for v, _ in out["applied"]][-1:] == [2], f"ACK-3 violated: the receiver ends at {out['applied']}"


def _acked(session, subject, v: int, published: dict) -> None:
    """The Ack of Receive(v), ok. A receiver that applied v (its report says so) and acked another version, or
    closed without acking, broke ACK-1; only silence with nothing to show for it is a matter of time."""
    try:
        ack, _ = session.recv_past_heartbeats(answer_bound())
    except HarnessError:
        raise TooSlow(f"ACK-1 violated: no Ack of version {v} within {answer_bound():.0f} s") from None
    except (PeerClosed, ConnectionResetError):
        raise AssertionError(f"ACK-1 violated: the receiver closed its channel where the Ack of {v} was due "
                             f"(its report: {subject.finish()})") from None
    assert ack.get("type") == "Ack", f"ACK-1 violated: the answer to Receive({v}) is {ack}"
    assert (ack["version"], ack["status"]) == (v, "ok"), (
        f"ACK-1 violated: Receive({v}), the only one unanswered, got {ack}: an Ack names the version it answers "
        "or a newer one, and a version published in a legal slot layout applies"
    )


def _applied_unacked(session, subject, v: int, acked: list[int]):
    """No Ack of `v` came in time: Stop, and the receiver's report and last frames decide. Having applied `v` and
    ended without acking it breaks ACK-1; anything else is a matter of time."""
    try:
        session.send({"type": "Stop"})
    except OSError:
        pass
    out = subject.finish()
    late = []
    try:
        while True:
            msg, _ = session.recv(tm.T)
            late.append((msg.get("type"), msg.get("version")))
    except (HarnessError, PeerClosed, ConnectionResetError):
        pass
    if v in [w for w, _ in out["applied"]] and ("Ack", v) not in late:
        raise AssertionError(f"ACK-1 violated: the receiver applied version {v} and never acked it (acks: "
                             f"{acked + [w for k, w in late if k == 'Ack']})")
    raise TooSlow(f"ACK-1 violated: no Ack of version {v} within {answer_bound():.0f} s")


@pytest.mark.req("INIT-2", "WIRE-6", "SM-R-1")
def test_another_major_version_is_refused_with_ready_error(sender, subject):
    session, *_ = _handshake(sender, subject, arrays(0), protocol="2.0", check=False)
    ready, _ = _expect(session, "Ready", "INIT-2")
    assert ready["status"] == "error" and ready["detail"], f"INIT-2 violated: an Init of protocol 2.0 got {ready}"
    out = subject.finish()
    assert not out["applied"], f"INIT-2 violated: the receiver applied {out['applied']} from a 2.0 Init"


#: Capability names no protocol defines, as a later minor version may add (WIRE-6: a peer ignores those it does not
#: know, and Ready lists only capabilities Init named).
FUTURE_CAPABILITIES = ["x-future-a", "x-future-b"]


@pytest.mark.req("WIRE-6", "INIT-2", "INIT-4")
def test_an_init_of_a_later_minor_version_is_taken(subject):
    """A minor version adds only what an older peer of the same major may ignore (WIRE-6), so a receiver refuses
    another major alone (INIT-2): an Init of protocol 1.9 naming capabilities nobody knows is answered Ready(ok),
    whose capabilities are a subset of the Init's naming none of those (it shares none of them), and its version
    held."""
    later = ScriptedSender(protocol="1.9")
    try:
        v0 = arrays(0)
        session, *_ = _handshake(later, subject, v0, protocol="1.9", check=False,
                                 extra={"capabilities": FUTURE_CAPABILITIES})
        ready, _ = _expect(session, "Ready", "WIRE-6")
        assert (ready["status"], ready["version"]) == ("ok", 0), (
            f"WIRE-6 violated: an Init of protocol 1.9 (a later minor version of major 1) naming capabilities "
            f"{FUTURE_CAPABILITIES} got {ready}")
        shared = ready.get("capabilities", [])
        assert isinstance(shared, list) and set(shared) <= set(FUTURE_CAPABILITIES), (
            f"WIRE-6 violated: Ready names capabilities {shared!r}, not a subset of the Init's {FUTURE_CAPABILITIES}")
        # Shared means known to both: a receiver that echoes the Init's list claims names no protocol defines, and
        # a sender of that later version would then send it messages it cannot read.
        assert not set(shared) & set(FUTURE_CAPABILITIES), (
            f"WIRE-6 violated: Ready names {sorted(set(shared) & set(FUTURE_CAPABILITIES))}, capabilities no protocol "
            "defines (the Init's, echoed): Ready carries only those the receiver shares with the sender")
        assert str(ready.get("protocol", "")).split(".")[0] == "1", (
            f"WIRE-6 violated: Ready(ok) gives protocol {ready.get('protocol')!r}, not one of major 1")
        session.send({"type": "Stop"})
        out = subject.finish()
        assert out["applied"] == [(0, digest(v0))], f"INIT-4 violated: from a 1.9 Init the receiver reports {out}"
    finally:
        later.close()


@pytest.mark.req("WIRE-8", "INIT-6")
@pytest.mark.parametrize("order", ["other", "unknown"])
def test_an_init_in_another_byte_order_is_refused_with_ready_error(sender, subject, order):
    """Slots written on a host of the other byte order, or under a byte order nobody knows, cannot be
    read here: Ready(error), and nothing applied (WIRE-8)."""
    byteorder = {"little": "big", "big": "little"}[sys.byteorder] if order == "other" else "middle"
    session, *_ = _handshake(sender, subject, arrays(0), check=False, byteorder=byteorder)
    ready, _ = _expect(session, "Ready", "WIRE-8")
    assert ready["status"] == "error" and ready["detail"], f"WIRE-8 violated: an Init in {byteorder!r} order got {ready}"
    out = subject.finish()
    assert not out["applied"], f"WIRE-8 violated: the receiver applied {out['applied']} from a {byteorder!r} Init"
    # The binding's connect() raises ReceiverError, as for INIT-6 (a program reports text alone: kinds is None).
    assert out["kinds"] is None or "ReceiverError" in out["kinds"], (
        f"WIRE-8 violated: refusing a {byteorder!r} Init, connect() raised {out['error']!r} (classes "
        f"{out['kinds']}), not ReceiverError")


@pytest.mark.req("WIRE-3", "INIT-4", "ACK-3")
def test_the_largest_version_the_wire_holds_is_taken(sender, subject):
    """Integers on the wire run up to 2**63 - 1 (WIRE-3): an Init at that version is a version like any."""
    top = 2**63 - 1
    v0 = arrays(7)
    session, *_ = _handshake(sender, subject, v0, version=top)
    session.send({"type": "Stop"})
    out = subject.finish()
    assert out["applied"] == [(top, digest(v0))], f"ACK-3 violated: at version {top} the receiver reports {out['applied']}"


@pytest.mark.req("MSG-2", "SM-R-1")
def test_an_init_for_another_id_is_refused(sender, subject):
    subject.start(sender.url(0))
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrays(0))
    session.send(init(5, manifest, [slotinfo(0, nbytes)], 0, 0), fds=[sender.slot(0, data, nbytes)])
    ready, _ = _expect(session, "Ready", "MSG-2")
    assert ready["status"] == "error", f"MSG-2 violated: an Init for receiver 5 reached receiver 0 and got {ready}"


@pytest.mark.req("RDV-6", "INIT-4")
@pytest.mark.parametrize("where", ["before Hello", "after Join"])
def test_a_join_the_sender_closed_unanswered_is_tried_again(sender, subject, where):
    """A sender may close a join under way (a flood of joins, a join out of time): closed before Hello, or after
    Join with neither Welcome nor Refuse, the receiver connects again within its connect timeout (RDV-6) and then
    takes its Init like any."""
    subject.start(sender.url(0))
    assert sender.accept(start_bound(), drop=where) is None
    try:
        session = sender.accept(answer_bound())
    except HarnessError:
        if subject.proc is not None and subject.proc.poll() is None:  # still trying, perhaps: a matter of time
            raise TooSlow(f"RDV-6 violated: no second join within {answer_bound():.0f} s of one closed {where}") from None
        out = subject.finish()
        raise AssertionError(f"RDV-6 violated: a join closed {where} was not tried again (the receiver reported "
                             f"{out})") from None
    manifest, data, nbytes = layout(arrays(0))
    session.send(init(0, manifest, [slotinfo(0, nbytes)], 0, 0), fds=[sender.slot(0, data, nbytes)])
    ready, _ = _expect(session, "Ready", "INIT-4")
    assert (ready["status"], ready["version"]) == ("ok", 0), f"INIT-4 violated: after the second join, Ready is {ready}"
    session.send({"type": "Stop"})
    out = subject.finish()
    assert out["applied"] == [(0, digest(arrays(0)))], f"INIT-4 violated: after the second join: {out}"


@pytest.mark.req("RDV-7")
def test_a_sender_that_cannot_prove_the_secret_gets_nothing(subject):
    impostor = ScriptedSender(welcome="bad")
    try:
        subject.start(impostor.url(0))
        session = impostor.accept(start_bound())
        manifest, data, nbytes = layout(arrays(0))
        try:
            session.send(init(0, manifest, [slotinfo(0, nbytes)], 0, 0), fds=[impostor.slot(0, data, nbytes)])
        except (BrokenPipeError, ConnectionResetError):
            pass  # it hung up on the Welcome already, as it should
        _closes(session, "a Welcome with a wrong proof")
        assert not [m for m in session.frames_in if b"Ready" in m[:12]], "RDV-7 violated: the receiver answered Init"
        out = subject.finish()
        assert not out["applied"], f"RDV-7 violated: the receiver took weights from an impostor: {out['applied']}"
    finally:
        impostor.close()


@pytest.mark.req("RDV-9")
def test_a_large_frame_before_any_proof_ends_the_join(subject):
    """A squatter's Hello of 16 KiB (legal in form, padded with an unknown field): before the sender proved
    the secret the receiver reads no frame over 8 KiB, so it sends no Join and closes the connection."""
    squatter = ScriptedSender(hello_size=16 * 1024)
    try:
        subject.start(squatter.url(0))
        session = squatter.accept(start_bound())
        _closes(session, "a Hello of 16 KiB before any proof", rule="RDV-9")
        assert not [m for m in session.frames_in if b"Join" in m[:12]], (
            "RDV-9 violated: the receiver answered a 16 KiB Hello with Join")
        subject.finish()
    finally:
        squatter.close()


@pytest.mark.req("RDV-9", "RDV-7")
def test_a_large_frame_in_place_of_the_welcome_ends_the_join_at_once(subject):
    """The listener takes the receiver's Join and answers with the length prefix of a 1 MiB frame, then nothing. The
    Join proves the receiver's secret, not the sender's: until the receiver has checked the Welcome's proof it reads
    no frame over 8 KiB (RDV-9), so it ends the join on those four bytes, at once, not at WIRE-7's frame bound after
    waiting for the frame (a squatter at the address would hold its connect() that long)."""
    squatter = ScriptedSender(welcome="a large frame")
    try:
        subject.start(squatter.url(0))
        session = squatter.accept(start_bound())
        t0 = time.monotonic()
        closed = session.closed_by_peer(tm.FRAME_BOUND + tm.REACTION + tm.SLACK)
        took = time.monotonic() - t0
        in_time(closed, f"RDV-9, SM-R-7 violated: the receiver kept the join open {took:.0f} s after a 1 MiB length "
                        "prefix came in place of the Welcome")
        in_time(took < tm.FRAME_BOUND - 0.5,  # unscaled: a re-check still tells a receiver that waited for the frame
                f"RDV-9 violated: the receiver ended the join {took:.1f} s after a 1 MiB length prefix came in place "
                "of the Welcome: it waited for the frame (WIRE-7's bound) instead of refusing its length before any proof")
        occurred("RDV-9.f")
        subject.finish()
    finally:
        squatter.close()


@pytest.mark.req("INIT-2", "RDV-3")
def test_a_hello_of_another_major_gets_no_join(subject):
    other = ScriptedSender(protocol="2.0")
    try:
        subject.start(other.url(0))
        session = other.accept(start_bound())
        _closes(session, "a Hello of protocol 2.0")
        assert not [m for m in session.frames_in if b"Join" in m[:12]], "INIT-2 violated: a Join answered a 2.0 Hello"
        out = subject.finish()
        assert not out["applied"] and out["error"], f"INIT-2 violated: the receiver reported {out}"
    finally:
        other.close()


@pytest.mark.req("RDV-4")
def test_a_refused_join_ends_the_receiver(subject):
    refusing = ScriptedSender(welcome="refuse")
    try:
        subject.start(refusing.url(0))
        assert refusing.accept(start_bound()) is None
        out = subject.finish()
        assert not out["applied"] and out["error"], f"RDV-4 violated: a refused receiver reported {out}"
    finally:
        refusing.close()


#: MSG-3: the file a payload of "a pickle that would create a file" creates if the receiver runs it.
CODE_MARK = f"/tmp/conformance-msg3-receiver-{os.getpid()}"

BAD_FRAMES = {
    "a pickle that would create a file": (frame(code_payload(CODE_MARK)), "MSG-3"),
    # name: (bytes after the handshake, the rule)
    "a length over 64 MiB": (b"\x7f\xff\xff\xff", "WIRE-2"),
    "a payload that is not MessagePack": (frame(b"\xc1\xc1"), "WIRE-3"),
    "an Ack, which does not go to a receiver": (frame(pack({"type": "Ack", "receiver": 0, "version": 1, "status": "ok",
                                                            "detail": ""})), "MSG-3"),
    "a Receive of an old version": (frame(pack({"type": "Receive", "version": 0, "slot": 0, "new_slots": []})), "VER-3"),
    "a Receive naming a slot never introduced": (frame(pack({"type": "Receive", "version": 1, "slot": 9,
                                                             "new_slots": []})), "SLOT-1"),
    "a slot introduced twice": (frame(pack({"type": "Receive", "version": 1, "slot": 0,
                                            "new_slots": [{"slot": 0, "device": "cpu", "nbytes": 64, "ipc": []}]})),
                                "SLOT-5"),
    "a second Init": (None, "SM-R-7"),
    "slot 0 introduced again, with its handle": (
        lambda n: {"type": "Receive", "version": 1, "slot": 0, "new_slots": [slotinfo(0, n)]}, "SLOT-5"),
    "a handle beside a frame that lists no slot": (
        lambda n: {"type": "Receive", "version": 1, "slot": 0, "new_slots": []}, "WIRE-4"),
    "a Receive listing a slot but no handle": (frame(pack({"type": "Receive", "version": 1, "slot": 4,
                                                           "new_slots": [{"slot": 4, "device": "cpu", "nbytes": 64,
                                                                          "ipc": []}]})), "WIRE-4"),
    "a zero-length frame": (b"\x00\x00\x00\x00", "WIRE-1"),
    "a message of a type no table defines": (frame(pack({"type": "Rewind", "version": 1, "slot": 0})), "MSG-3"),
    "a Receive followed by trailing bytes in its frame": (
        frame(pack({"type": "Receive", "version": 1, "slot": 0, "new_slots": []}) + b"\xc0"), "WIRE-3"),
    # Its new slot's device, a known str field, holds bytes that are not UTF-8 (0xff never occurs in UTF-8).
    "a Receive with invalid UTF-8 in a str": (
        lambda n: frame(pack({"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, n)]})
                        .replace(b"\xa3cpu", b"\xa3\xff\xfeu")), "WIRE-3"),
}


@pytest.mark.req("SM-R-7", "SEC-1", "WIRE-1", "WIRE-2", "WIRE-3", "MSG-3", "VER-3", "SLOT-1", "SLOT-5", "WIRE-4",
                  "SM-R-8")
@pytest.mark.parametrize("bad", sorted(BAD_FRAMES))
def test_a_sender_that_breaks_the_protocol_is_cut_off(sender, subject, bad):
    v0 = arrays(0)
    session, manifest, nbytes = _handshake(sender, subject, v0)
    data, rule = BAD_FRAMES[bad]
    if data is None:
        data = frame(pack(init(0, manifest, [], 1, 0)))
    if callable(data):  # a message that carries one handle: a slot of the right size
        msg, fds = data(nbytes), [sender.slot(7, layout(arrays(1))[1], nbytes)]
        session.send_raw(msg, fds) if isinstance(msg, bytes) else session.send(msg, fds)
    else:
        session.send_raw(data)
    try:
        _closes(session, bad, rule=rule)
    finally:
        if os.path.exists(CODE_MARK):
            os.remove(CODE_MARK)
            raise AssertionError(f"MSG-3 violated: decoding {bad!r} the receiver ran its code (it created {CODE_MARK})")
    out = subject.finish()
    assert [v for v, _ in out["applied"]] == [0], f"{rule} violated: after {bad} the receiver reported {out['applied']}"
    assert out["stopped"] or out["error"], f"SM-R-7 violated: after {bad} the receiver neither stopped nor failed"
    # The binding's receiver.stopped, read once the worker's loop ended (a program prints `error` instead).
    assert out["kinds"] is None or out["stopped"], f"SM-R-8 violated: after {bad} receiver.stopped is not True"


# ---- negatives generated from the schema (WIRE-3): every field missing, of another type, over its bound ----

#: The version every handshake here starts with: its manifest, its slot's bytes and the slot's size.
_MANIFEST, _SLOT0, _NBYTES = layout(arrays(0))
#: The legal frames a sender sends once joined, each the base of its negatives: an Init in place of the Init,
#: a Receive of version 1 in a new slot, Stop and Heartbeat (which have no fields) while live.
ON_CHANNEL = [("Init", init(0, _MANIFEST, [slotinfo(0, _NBYTES)], 0, 0)),
              ("live", {"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, _NBYTES)]}),
              ("live", {"type": "Stop"}), ("live", {"type": "Heartbeat"})]
#: The legal frames of a join (section 14), each the base of its negatives: Hello in place of Hello, Welcome
#: and Refuse in place of the answer to a right Join.
JOINING = [("Hello", {"type": "Hello", "protocol": "1.1", "nonce": bytes(32)}),
           ("Welcome", {"type": "Welcome", "proof": bytes(32)}), ("Refuse", {"type": "Refuse", "detail": "refused"})]


def schema_cases(bases) -> list:
    """One pytest param (step, payload, clause, case) per negative of each legal message of `bases`, named by it."""
    return [pytest.param(step, payload, clause, name, id=name) for step, base in bases
            for name, payload, clause in negatives(base)]


def _cut_off(session, subject, case: str, held: list[int]) -> None:
    """The receiver treats the frame `case` as the violation it is (SM-R-7): it answers nothing (Heartbeat
    aside), closes its channel within the reaction bound, applies nothing beyond the versions `held`, and ends
    stopped or with an error: the binding's a RemoteProtocolError. An answer takes the frame as legal: Ready(error)
    refuses a legal Init (INIT-6, the receiver then failed, not stopped), Ack(error) keeps the receiver live (ACK-6)."""
    bound = tm.REACTION + tm.SLACK
    try:
        msg = session.answer_before_close(bound, ignore=("Heartbeat",))
    except HarnessError:
        raise TooSlow(f"SM-R-7 violated: the receiver kept its channel open {bound:.0f} s after {case}") from None
    assert msg is None, (f"WIRE-3 violated: the receiver answered {case} with {msg!r:.300}; the frame is a "
                         "violation, after which it closes its channel without an answer (SM-R-7)")
    out = subject.finish()
    assert [v for v, _ in out["applied"]] == held, f"WIRE-3 violated: after {case} the receiver reported {out['applied']}"
    assert out["stopped"] or out["error"], f"SM-R-7 violated: after {case} the receiver neither stopped nor failed"
    assert out["kinds"] is None or "RemoteProtocolError" in out["kinds"], (
        f"WIRE-3, SM-R-7 violated: after {case} the receiver's error is {out['error']!r}, not a RemoteProtocolError")


@pytest.mark.req("WIRE-3", "SM-R-7", "SEC-1")
@pytest.mark.parametrize("step,payload,clause,case", schema_cases(ON_CHANNEL))
def test_a_frame_that_breaks_the_schema_is_a_violation(sender, subject, step, payload, clause, case):
    """Each negative of Init (in place of the Init), Receive, Stop and Heartbeat (once live), made from Table
    12-1 by wire_schema.negatives: the receiver closes its channel unanswered and takes nothing of it (WIRE-3,
    SM-R-7)."""
    if step == "Init":
        subject.start(sender.url(0))
        session, held = sender.accept(start_bound()), []
        fds = [sender.slot(0, _SLOT0, _NBYTES)]
    else:
        session, _, nbytes = _handshake(sender, subject, arrays(0))
        held, fds = [0], [sender.slot(1, layout(arrays(1))[1], nbytes)]
    session.send(payload, fds=fds[: handles_listed(payload)])  # WIRE-4 read literally from the bad payload
    occurred(clause)
    _cut_off(session, subject, case, held)


@pytest.mark.req("WIRE-3", "RDV-3", "SM-R-7")
@pytest.mark.parametrize("step,payload,clause,case", schema_cases(JOINING))
def test_a_join_frame_that_breaks_the_schema_is_a_violation(sender, subject, step, payload, clause, case):
    """Each negative of Hello, Welcome and Refuse from the listener: the joiner answers nothing (no Join, no
    Ready to the Init that follows a Welcome), closes the connection and ends with an error, having applied
    nothing (RDV-3: anything else on a joining connection is a violation; WIRE-3)."""
    subject.start(sender.url(0))
    session = sender.accept(start_bound(), instead=("Hello" if step == "Hello" else "Welcome", payload))
    occurred(clause)
    if step == "Welcome":  # what a joiner that took the Welcome would read next, and answer
        try:
            session.send(init(0, _MANIFEST, [slotinfo(0, _NBYTES)], 0, 0), fds=[sender.slot(0, _SLOT0, _NBYTES)])
        except (BrokenPipeError, ConnectionResetError):
            pass  # it hung up on the Welcome already, as it should
    _cut_off(session, subject, case, [])


@pytest.mark.waits(10)
@pytest.mark.req("WIRE-7", "SEC-2", "INIT-5")
def test_a_frame_cut_short_does_not_hold_the_receiver(sender, subject):
    """Half an Init, then a byte now and then: the receiver's wait is bounded, and the frame becomes a violation
    10 s after its first byte (WIRE-7), however the rest trickles in."""
    subject.start(sender.url(0))
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrays(0))
    whole = frame(pack(init(0, manifest, [slotinfo(0, nbytes)], 0, 0)))
    t0 = time.monotonic()
    half = len(whole) // 2
    session.send_raw(whole[:half], fds=[sender.slot(0, data, nbytes)])
    # Then a byte every half second, never the last: the bound counts from the frame's first byte, not its latest.
    end, closed = t0 + tm.REACTION + tm.SLACK, False
    for k in range(half, len(whole) - 1):
        closed = session.closed_by_peer(min(0.5, max(0.0, end - time.monotonic())))
        if closed or time.monotonic() >= end:
            break
        try:
            session.send_raw(whole[k:k + 1])
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
    if not closed:
        _closes(session, "half an Init and a byte every half second", bound=max(0.0, end - time.monotonic()),
                rule="WIRE-7")
    in_time(time.monotonic() - t0 <= tm.REACTION + tm.SLACK,
            f"WIRE-7 violated: half an Init was cut off only after {time.monotonic() - t0:.1f} s")
    out = subject.finish()
    assert not out["applied"], f"WIRE-7 violated: the receiver reported {out['applied']} from half an Init"


@pytest.mark.req("INIT-5", "WIRE-7", "API-3")
def test_connect_timeout_bounds_a_stalled_handshake(sender, request):
    """The binding's connect(timeout) returns within its timeout though the Init stalls halfway."""
    if request.config.getoption("--receiver-cmd"):
        pytest.skip("connect(timeout) is the Python binding's; an outside program is judged on the wire")
    w = request.getfixturevalue("pool").get(1)[0]
    w.call("open", sender.url(0))
    w.submit("connect", tm.TIMED)
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrays(0))
    whole = frame(pack(init(0, manifest, [slotinfo(0, nbytes)], 0, 0)))
    t0 = time.monotonic()
    session.send_raw(whole[:10], fds=[sender.slot(0, data, nbytes)])
    status, value = w.result(tm.TIMED + tm.SLACK + tm.T)
    elapsed = time.monotonic() - t0
    assert status == "err" and value.isa("SyncTimeoutError"), f"INIT-5 violated: connect({tm.TIMED}) gave {value}"
    in_time(elapsed <= tm.TIMED + tm.SLACK, f"INIT-5 violated: connect({tm.TIMED}) returned after {elapsed:.1f} s")
    session.close()


@pytest.mark.req("WIRE-2", "WIRE-6", "ACK-1", "RDV-9")
def test_a_frame_of_exactly_the_bound_is_read(sender, subject):
    """A Receive whose payload is exactly 64 MiB (the sender-to-receiver bound, WIRE-2), padded with an
    unknown field (ignored, WIRE-6), is a legal frame: the receiver applies it and acks. It joined by URL, and
    past the join's proof RDV-9's 8 KiB bound gives way to WIRE-2's."""
    _applies_a_legal_receive(sender, subject, lambda receive: padded(receive, MAX_TO_RECEIVER), "WIRE-2, RDV-9",
                             "a Receive of exactly 64 MiB")


@pytest.mark.req("WIRE-3", "WIRE-6", "ACK-1")
def test_unknown_fields_are_ignored_whatever_they_hold(sender, subject):
    """A Receive with unknown fields holding any legal MessagePack (maps keyed by integers, by maps, by
    arrays, extension types) is a legal frame: the receiver applies it and acks (WIRE-3)."""
    _applies_a_legal_receive(sender, subject, with_odd_fields, "WIRE-3", "a Receive with odd unknown fields")


def _applies_a_legal_receive(sender, subject, payload_of, rule: str, what: str) -> None:
    """After the handshake, Receive(1) written as `payload_of(receive)`: the receiver acks it ok and, once
    stopped, reports version 1's bytes as the last it applied."""
    session, manifest, nbytes = _handshake(sender, subject, arrays(0))
    v1 = arrays(1)
    fd1 = sender.slot(1, layout(v1)[1], nbytes)
    receive = {"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, nbytes)]}
    session.send_raw(frame(payload_of(receive)), fds=[fd1])
    ack, _ = _expect(session, "Ack", rule)
    assert (ack["version"], ack["status"]) == (1, "ok"), f"{rule} violated: {what} got {ack}"
    session.send({"type": "Stop"})
    out = subject.finish()
    assert out["applied"] and out["applied"][-1] == (1, digest(v1)), (
        f"ACK-3 violated: after {what} the receiver reports {out['applied']}"
    )


def _receive(sender, session, v: int, arrs, nbytes: int) -> None:
    """Receive(v) in a new slot `v` holding `arrs`, with its handle."""
    fd = sender.slot(v, layout(arrs)[1], nbytes)
    session.send({"type": "Receive", "version": v, "slot": v, "new_slots": [slotinfo(v, nbytes)]}, fds=[fd])


def _acks_up_to(session, v: int, sent, what: str) -> None:
    """Acks, each ok, of a version in `sent` (the Receives not yet answered) and newer than the one before,
    until one of `v` (one Ack may answer several, ACK-2)."""
    acked: list[int] = []
    while not acked or acked[-1] < v:
        ack, _ = _expect(session, "Ack", "MSG-4")
        assert ack["status"] == "ok" and ack["version"] in sent and (not acked or ack["version"] > acked[-1]), (
            f"MSG-4 violated: {what}, the receiver answered {ack} (Receives sent: {sorted(sent)}, acked: {acked})"
        )
        acked.append(ack["version"])


def _beat(session, n: int, what: str) -> None:
    """n Heartbeats, each its own write; a channel the receiver closed on an earlier one is MSG-4's."""
    try:
        session.send_heartbeats(n)
    except (BrokenPipeError, ConnectionResetError):
        raise AssertionError(f"MSG-4 violated: the receiver closed its channel on a Heartbeat {what}") from None


def _stops_holding(session, subject, published: dict, last: int, what: str) -> None:
    """Stop, then the receiver's report: no error, every version it applied holds the bytes published for
    it, the last one is `last`, and it says it stopped (MSG-4: the Heartbeats changed none of this)."""
    session.send({"type": "Stop"})
    out = subject.finish()
    assert out["error"] is None, f"MSG-4 violated: a receiver that was {what} reports {out['error']!r}"
    for v, d in out["applied"]:
        assert published.get(v) == d, f"ACK-3 violated: the receiver holds version {v} with other bytes than published"
    assert out["applied"] and out["applied"][-1][0] == last, (
        f"MSG-4 violated: a receiver that was {what} ends at {out['applied']}, not version {last}"
    )
    assert out["stopped"], "LIFE-7 violated: after Stop the receiver does not say it stopped"


@pytest.mark.req("MSG-4", "SM-R-2", "ACK-1", "ACK-3", "LIFE-7")
def test_heartbeats_while_live_are_ignored(sender, subject):
    """Heartbeat from the sender on a live receiver's Unix channel (three in a row after Ready, one between two
    Receives, one before each of the last Receive and Stop) changes nothing (MSG-4): the receiver stays up,
    applies and acks every version bit for bit, keeps its channel, and stops only at Stop."""
    v0 = arrays(0)
    session, manifest, nbytes = _handshake(sender, subject, v0)
    published = {0: digest(v0)}
    _beat(session, 3, "after Ready")
    v1 = arrays(1)
    _receive(sender, session, 1, v1, nbytes)
    published[1] = digest(v1)
    _acks_up_to(session, 1, {1}, "after three Heartbeats and Receive(1)")
    v2, v3 = arrays(2), arrays(3)
    _receive(sender, session, 2, v2, nbytes)
    published[2] = digest(v2)
    _beat(session, 1, "between two Receives")
    _receive(sender, session, 3, v3, nbytes)
    published[3] = digest(v3)
    _acks_up_to(session, 3, {2, 3}, "after Receive(2), a Heartbeat and Receive(3)")
    _beat(session, 1, "after an Ack")
    v4 = arrays(4)
    _receive(sender, session, 4, v4, nbytes)
    published[4] = digest(v4)
    _acks_up_to(session, 4, {4}, "after a Heartbeat and Receive(4)")
    _beat(session, 1, "before Stop")
    _stops_holding(session, subject, published, 4, "sent Heartbeats while live")


@pytest.mark.req("MSG-4", "SM-R-1", "INIT-4", "ACK-3", "LIFE-7")
def test_a_heartbeat_before_init_is_ignored(sender, subject):
    """Heartbeat after the join and before Init, the receiver in state new, changes nothing (MSG-4): the
    handshake goes on as if it had not come (Ready(ok) at the Init's version), and the receiver is live."""
    subject.start(sender.url(0))
    session = sender.accept(start_bound())
    v0 = arrays(0)
    manifest, data, nbytes = layout(v0)
    _beat(session, 2, "before Init")
    time.sleep(0.05)  # not a bound: the receiver waits for Init with the Heartbeats read
    try:
        session.send(init(0, manifest, [slotinfo(0, nbytes)], 0, 0), fds=[sender.slot(0, data, nbytes)])
    except (BrokenPipeError, ConnectionResetError):
        raise AssertionError("MSG-4 violated: the receiver closed its channel on a Heartbeat before Init") from None
    ready, _ = _expect(session, "Ready", "MSG-4")
    assert ready["status"] == "ok" and ready["version"] == 0, (
        f"MSG-4 violated: after Heartbeats before Init, Ready is {ready}"
    )
    v1 = arrays(1)
    _receive(sender, session, 1, v1, nbytes)
    _acks_up_to(session, 1, {1}, "after Heartbeats before Init and Receive(1)")
    _stops_holding(session, subject, {0: digest(v0), 1: digest(v1)}, 1, "sent Heartbeats before Init")


# ---- decoders are lenient (WIRE-5), slots are checked (WIRE-8), the spec's vectors are understood (WIRE-9) ----


@pytest.mark.req("WIRE-5", "WIRE-3", "ACK-1", "ACK-3", "LIFE-7")
def test_any_valid_encoding_is_decoded(sender, subject):
    """Frames no canonical encoder writes, each legal (WIRE-5): keys in reverse order (`type` last, each record's
    fields reversed), every integer in its 64-bit form and every header in its 32-bit form, the optional fields
    left out (an Init without capabilities and data_plane, SlotInfos without ipc). The receiver answers the Init
    Ready(ok), passes over the Heartbeat, applies and acks the Receive, all so written. Then a Receive whose
    version key is written twice, 9 first and 2 last: the receiver takes the last value (Ack(2)) or treats the map
    as a violation, never the first (WIRE-3)."""
    v0, v1, v2 = arrays(0), arrays(1), arrays(2)
    subject.start(sender.url(0))
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(v0)
    session.send_raw(frame(loose(without_optional(init(0, manifest, [slotinfo(0, nbytes)], 0, 0)))),
                     fds=[sender.slot(0, data, nbytes)])
    ready, _ = _expect(session, "Ready", "WIRE-5")
    assert (ready["status"], ready["version"]) == ("ok", 0), (
        f"WIRE-5 violated: an Init with its keys reversed, 64-bit integers and no optional field got {ready}")
    receive = {"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, nbytes)]}
    session.send_raw(frame(loose(HEARTBEAT)))
    session.send_raw(frame(loose(without_optional(receive))), fds=[sender.slot(1, layout(v1)[1], nbytes)])
    ack, _ = _expect(session, "Ack", "WIRE-5")
    assert (ack["version"], ack["status"]) == (1, "ok"), (
        f"WIRE-5 violated: a Receive with its keys reversed, 64-bit integers and a SlotInfo without ipc got {ack}")
    twice = {"type": "Receive", "version": 2, "slot": 2, "new_slots": [slotinfo(2, nbytes)]}
    session.send_raw(frame(with_repeated_key(twice, "version", 9)), fds=[sender.slot(2, layout(v2)[1], nbytes)])
    bound = answer_bound()
    try:
        answer = session.answer_before_close(bound, ignore=("Heartbeat",))
    except HarnessError:
        raise TooSlow(f"WIRE-3 violated: no answer to a Receive whose version key is repeated, and the channel open "
                      f"{bound:.0f} s later") from None
    if answer is not None:
        assert (answer.get("type"), answer.get("version"), answer.get("status")) == ("Ack", 2, "ok"), (
            f"WIRE-3 violated: a Receive whose version key holds 9, then 2, got {answer!r:.200}: a decoder takes the "
            "last value or treats the map as a violation, never the first")
        session.send_raw(frame(loose({"type": "Stop"})))
    out = subject.finish()
    published = {0: digest(v0), 1: digest(v1), 2: digest(v2)}
    for v, d in out["applied"]:
        assert published.get(v) == d, (
            f"WIRE-3, WIRE-5 violated: the receiver reports version {v} with other bytes than published for it")
    last = 2 if answer is not None else 1
    assert out["applied"] and out["applied"][-1][0] == last, (
        f"WIRE-5 violated: the receiver ends at {out['applied']}, not version {last}")
    assert answer is None or out["stopped"], "WIRE-5 violated: after a Stop written as a 32-bit map it did not stop"


#: How the slot buffer breaks WIRE-8, where: the handle comes with the Init or with a Receive's new slot.
SHORT_SLOTS = {
    "the Init's slot buffer shorter than its nbytes": "Init",
    "a new slot's buffer shorter than its nbytes": "Receive",
    "the Init's last array ending past its slot's nbytes": "Init",
}


@pytest.mark.req("WIRE-8", "SEC-1")
@pytest.mark.parametrize("case", sorted(SHORT_SLOTS))
def test_a_slot_shorter_than_its_layout_is_never_read(sender, subject, case):
    """A buffer of 64 bytes where the SlotInfo says more, the manifest's arrays running past those 64 bytes; or a
    buffer of the SlotInfo's size, with the manifest's last array ending past it. A receiver checks the buffer's
    size before reading it (WIRE-8): it refuses the Init with Ready(error) or the Receive with Ack(error), or cuts
    the sender off as at a violation. It never takes the version (no Ready(ok), no Ack(ok), not reported applied),
    and it does not crash on a read past the end of the buffer."""
    v0, v1 = arrays(0), arrays(1)
    manifest, data, nbytes = layout(v0)
    where = SHORT_SLOTS[case]
    if where == "Init":
        subject.start(sender.url(0))
        session = sender.accept(start_bound())
        if "past" in case:  # the SlotInfo and its buffer end 64 bytes before the last array does
            slot_nbytes = -(-(manifest[-1]["offset"] + manifest[-1]["nbytes"]) // 64) * 64 - 64
            fd = sender.slot(0, data[:slot_nbytes], slot_nbytes)
        else:
            slot_nbytes, fd = nbytes, sender.slot(0, data[:64], 64)
        session.send(init(0, manifest, [slotinfo(0, slot_nbytes)], 0, 0), fds=[fd])
        refused, held = ("Ready", 0), []
    else:
        session, manifest, nbytes = _handshake(sender, subject, v0)
        session.send({"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, nbytes)]},
                     fds=[sender.slot(1, layout(v1)[1][:64], 64)])
        refused, held = ("Ack", 1), [0]
    occurred("WIRE-8.h")
    bound = answer_bound()
    try:
        answer = session.answer_before_close(bound, ignore=("Heartbeat",))
    except HarnessError:
        raise TooSlow(f"WIRE-8 violated: no answer to {case}, and the channel open {bound:.0f} s later") from None
    if answer is not None:
        assert (answer.get("type"), answer.get("version"), answer.get("status")) != (*refused, "ok"), (
            f"WIRE-8 violated: with {case} the receiver answered {answer!r:.200}: it read a slot without checking "
            "that its buffer holds the SlotInfo's nbytes and the arrays the manifest places in it")
        try:
            session.send({"type": "Stop"})
        except OSError:
            pass  # it closed its channel after a Ready(error)
    out = subject.finish()
    if subject.proc is not None:
        assert subject.proc.returncode is not None and subject.proc.returncode >= 0, (
            f"WIRE-8 violated: with {case} the receiver program died of signal {-subject.proc.returncode} (a read "
            "past the end of the slot's buffer)")
    # Only versions before the broken one: a receiver whose apply failed may hold none (ACK-6), and may have done so
    # before its first report.
    assert {v for v, _ in out["applied"]} <= set(held), (
        f"WIRE-8 violated: with {case} the receiver reports {out['applied']}, versions from a slot it cannot hold")


def _spec_vectors() -> dict[str, bytes]:
    """The frames of spec/12-wire.md's test vectors, by their headings (WIRE-9)."""
    import re

    from .names import SPEC_DIR

    pattern = re.compile(r"^#### (?P<name>.+?)\n\nPayload as JSON: `[^`]+`\n\nFrame, \d+ bytes:\n\n"
                         r"```text\n(?P<hex>[0-9a-f \n]+?)```", re.M)
    text = (SPEC_DIR / "12-wire.md").read_text()
    return {m["name"]: bytes.fromhex(m["hex"].replace(" ", "").replace("\n", "")) for m in pattern.finditer(text)}


@pytest.mark.req("WIRE-9", "WIRE-4", "ACK-1", "ACK-3", "LIFE-7")
def test_the_spec_vectors_are_understood_and_answered_exactly(sender, subject):
    """The scripted sender writes the spec's sender-side frames byte for byte (WIRE-9) to a receiver joined as 2:
    Init (version 7 in slot 1 of two 128-byte slots: w float32[2, 3] at 0, step int64 at 64), Heartbeat,
    Receive (8 in slot 0), Receive introducing slot 2 (9), Stop. The receiver holds each version bit for bit; its
    Ready is the spec's Ready frame (holds_slot as it declares) and its Ack of 9 is exactly the spec's Ack frame."""
    if sys.byteorder != "little":
        pytest.skip("the vectors' Init says byteorder 'little'; this host would rightly refuse it (WIRE-8)")
    vectors = _spec_vectors()
    rnd = random.Random(9)

    def version(v):
        return [("w", "float32", (2, 3), rnd.randbytes(24)), ("step", "int64", (), v.to_bytes(8, "little"))]

    def slot_bytes(arrs):
        (_, _, _, w), (_, _, _, step) = arrs
        return w + bytes(40) + step

    v7, v8, v9 = version(7), version(8), version(9)
    subject.start(sender.url(2))
    session = sender.accept(start_bound())
    fds = [sender.slot(0, slot_bytes(v8), 128), sender.slot(1, slot_bytes(v7), 128)]  # slot 0 is read at 8 only
    session.send_raw(vectors["Init"], fds=fds)
    ready, _ = _expect(session, "Ready", "WIRE-9")
    assert (ready["status"], ready["version"]) == ("ok", 7), f"WIRE-9 violated: the spec's Init frame got {ready}"
    expected = pack({"type": "Ready", "receiver": 2, "version": 7, "status": "ok", "detail": "",
                     "holds_slot": ready.get("holds_slot"), "protocol": "1.1", "capabilities": []})
    assert session.frames_in[-1] == expected, (
        f"WIRE-9 violated: the Ready to the spec's Init is {session.frames_in[-1].hex(' ')}, not the spec's Ready frame "
        f"(holds_slot {ready.get('holds_slot')}) {expected.hex(' ')}")
    session.send_raw(vectors["Heartbeat"])
    session.send_raw(vectors["Receive"])
    ack, _ = _expect(session, "Ack", "WIRE-9")
    assert (ack["version"], ack["status"]) == (8, "ok"), f"WIRE-9 violated: the spec's Receive frame got {ack}"
    session.send_raw(vectors["Receive, introducing a slot"], fds=[sender.slot(2, slot_bytes(v9), 128)])
    ack, _ = _expect(session, "Ack", "WIRE-9")
    assert (ack["version"], ack["status"]) == (9, "ok"), (
        f"WIRE-9 violated: the spec's Receive introducing slot 2 got {ack}")
    assert frame(session.frames_in[-1]) == vectors["Ack"], (
        f"WIRE-9 violated: the Ack of 9 is {frame(session.frames_in[-1]).hex(' ')}, not the spec's Ack frame "
        f"{vectors['Ack'].hex(' ')}")
    session.send_raw(vectors["Stop"])
    out = subject.finish()
    published = {7: digest(v7), 8: digest(v8), 9: digest(v9)}
    for v, d in out["applied"]:
        assert published.get(v) == d, f"WIRE-9 violated: from the spec's frames the receiver holds version {v} " \
                                      "with other bytes than the slot held"
    assert out["applied"] and out["applied"][-1][0] == 9, f"WIRE-9 violated: the receiver ends at {out['applied']}"
    assert out["stopped"], "WIRE-9 violated: after the spec's Stop frame the receiver does not say it stopped"


# ---- what the binding's receiver reports (section 10): connect() and poll() name the violation ----


@pytest.mark.req("SM-R-7", "SM-R-1", "MSG-3")
@pytest.mark.parametrize("instead", ["a Receive", "a Ready"])
def test_a_message_in_place_of_the_init_is_a_violation(sender, subject, instead):
    """The first frame after the join is a Receive (a message of a later state) or a Ready (one of the other
    direction), not Init: connect() raises RemoteProtocolError and the receiver closes its channel without an
    answer, having applied nothing (SM-R-7)."""
    subject.start(sender.url(0))
    session = sender.accept(start_bound())
    msg = ({"type": "Receive", "version": 1, "slot": 0, "new_slots": []} if instead == "a Receive" else
           {"type": "Ready", "receiver": 0, "version": 0, "status": "ok", "detail": "", "holds_slot": False,
            "protocol": "1.1", "capabilities": []})
    session.send(msg)
    _cut_off(session, subject, f"{instead} in place of the Init", [])


@pytest.mark.req("SM-R-3", "CON-1", "ACK-3")
def test_an_end_of_channel_without_stop_stops_a_live_receiver(sender, subject):
    """The sender's end of a live receiver's channel closes after an Ack, without Stop: the receiver stops
    (SM-R-3), the version it acked still held and readable, and it reports no version more."""
    v0, v1 = arrays(0), arrays(1)
    session, manifest, nbytes = _handshake(sender, subject, v0)
    _receive(sender, session, 1, v1, nbytes)
    _acks_up_to(session, 1, {1}, "after Receive(1)")
    session.close()
    out = subject.finish()
    assert out["applied"] and out["applied"][-1] == (1, digest(v1)), (
        f"SM-R-3 violated: after its channel ended without Stop the receiver reports {out['applied']}, not version 1 "
        "as it acked it")
    assert out["stopped"], "SM-R-3 violated: the end of a live receiver's channel did not stop it"


def _live_pull_worker(sender, request):
    """A pull receiver of the binding's in a worker process, connected to the scripted sender at version 0:
    the worker and the sender's session with it."""
    w = request.getfixturevalue("pool").get(1)[0]
    w.call("open", sender.url(0), "pull")
    w.submit("connect", answer_bound())
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrays(0))
    session.send(init(0, manifest, [slotinfo(0, nbytes)], 0, 0), fds=[sender.slot(0, data, nbytes)])
    status, value = w.result(answer_bound() + tm.SLACK)
    assert (status, value) == ("ok", 0), f"INIT-4 violated: a pull receiver's connect() gave {status} {value}"
    _expect(session, "Ready", "INIT-4")
    return w, session


@pytest.mark.req("SM-R-7", "SM-R-2")
@pytest.mark.needs("pull")
def test_poll_raises_the_violation_of_a_pull_receivers_sender(sender, request):
    """A pull receiver (the binding's, in a worker process) whose sender sends a Receive of a type no table
    defines once it is live: the next poll() raises RemoteProtocolError (SM-R-7), and the receiver is stopped."""
    if request.config.getoption("--receiver-cmd"):
        pytest.skip("poll() is the Python binding's; an outside program is judged on the wire")
    w, session = _live_pull_worker(sender, request)
    session.send({"type": "Rewind", "version": 1, "slot": 0})
    status, value = w.outcome("poll", tm.T, bound=tm.T + tm.SLACK + answer_bound())
    assert status == "err" and value.isa("RemoteProtocolError"), (
        f"SM-R-7 violated: poll() of a pull receiver whose sender sent a message of an unknown type gave "
        f"{status} {value}, not RemoteProtocolError")
    state = w.call("state")
    assert state["stopped"], f"SM-R-7 violated: after the violation the pull receiver is not stopped: {state}"
    _closes(session, "a message of an unknown type", rule="SM-R-7")


@pytest.mark.req("SLOT-1", "SLOT-5", "ACK-2", "ACK-1")
@pytest.mark.needs("pull")
def test_a_slot_introduced_by_a_skipped_receive_stays_known(sender, request):
    """A pull receiver (the binding's, in a worker process) that has not polled is sent Receive(1) and Receive(2),
    each introducing a new slot with its handle; its poll() may skip version 1 (ACK-2: the newest wins). Slot 1
    was introduced all the same, once (SLOT-5), and its handle came only then (SLOT-1): a later Receive(3) naming
    slot 1, rewritten with version 3, must be applied and acked ok, not failed for a slot the receiver let go."""
    if request.config.getoption("--receiver-cmd"):
        pytest.skip("poll() is the Python binding's; an outside program is judged on the wire")
    w, session = _live_pull_worker(sender, request)
    nbytes = layout(arrays(0))[2]
    fds = {v: sender.slot(v, layout(arrays(v))[1], nbytes, rewritable=True) for v in (1, 2)}
    for v in (1, 2):
        session.send({"type": "Receive", "version": v, "slot": v, "new_slots": [slotinfo(v, nbytes)]}, fds=[fds[v]])
    polled = []
    for _ in range(2):  # the newest at once, or version 1 and then 2 (each poll applies one)
        status, got = w.outcome("poll", tm.T, bound=tm.T + tm.SLACK + answer_bound())
        assert status == "ok", f"ACK-1 violated: poll() with Receive(1) and Receive(2) pending gave {status} {got}"
        polled.append(got)
        if got == 2:
            break
    assert polled[-1] == 2, f"ACK-2 violated: polls with Receive(1) and Receive(2) pending gave {polled}, not 2"
    _acks_up_to(session, 2, {1, 2}, "after Receive(1) and Receive(2)")
    skipped = polled == [2]
    if skipped:
        occurred("SLOT-1.f")
    sender.rewrite(1, layout(arrays(3))[1])  # every Receive naming slot 1 is answered: it is free (SLOT-2)
    session.send({"type": "Receive", "version": 3, "slot": 1, "new_slots": []})
    status, got = w.outcome("poll", tm.T, bound=tm.T + tm.SLACK + answer_bound())
    assert (status, got) == ("ok", 3), (
        f"SLOT-1 violated: poll() of Receive(3) naming slot 1, introduced by a Receive the receiver skipped, gave "
        f"{status} {got}: a slot introduced once stays known however its Receive was answered")
    ack, _ = _expect(session, "Ack", "ACK-1")
    assert (ack.get("version"), ack.get("status")) == (3, "ok"), (
        f"SLOT-1 violated: Receive(3) naming slot 1, introduced by a skipped Receive, was answered {ack}")
    if not skipped:
        checked_nothing(f"the receiver applied version 1 before 2 (polls gave {polled}): no Receive was skipped")


@pytest.mark.req("SM-R-4", "LIFE-6")
@pytest.mark.parametrize("state", ["failed", "stopped"])
def test_close_of_a_failed_or_stopped_receiver_closes_it(sender, request, state):
    """The binding's receiver, failed (it refused an Init in a byte order nobody knows: Ready(error)) or stopped (a
    Stop after its Ready): close() returns, a second close() does nothing, and the receiver is closed: poll(),
    connect() and reading() raise ClosedError (SM-R-4, LIFE-6)."""
    if request.config.getoption("--receiver-cmd"):
        pytest.skip("close() is the Python binding's; an outside program is judged on the wire")
    w = request.getfixturevalue("pool").get(1)[0]
    w.call("open", sender.url(0))
    w.submit("connect", answer_bound())
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrays(0))
    msg = init(0, manifest, [slotinfo(0, nbytes)], 0, 0)
    if state == "failed":
        msg["byteorder"] = "middle"
    session.send(msg, fds=[sender.slot(0, data, nbytes)])
    ready, _ = _expect(session, "Ready", "INIT-4")
    status, value = w.result(answer_bound() + tm.SLACK)
    if state == "failed":
        assert ready["status"] == "error" and status == "err", (
            f"WIRE-8 violated: an Init in byte order 'middle' got {ready} and connect() gave {status} {value}")
    else:
        assert ready["status"] == "ok" and (status, value) == ("ok", 0), f"INIT-4 violated: {ready}, {status} {value}"
        session.send({"type": "Stop"})
        end = time.monotonic() + tm.REACTION + tm.SLACK
        while not w.call("state")["stopped"]:  # its push thread reads the Stop (SM-R-3)
            in_time(time.monotonic() < end, "SM-R-3 violated: a receiver that got Stop is not stopped")
            time.sleep(0.01)  # not a bound: the state is asked again until the deadline above
    closed = w.call("close", twice=True, keep=True, bound=tm.REACTION + tm.SLACK)
    assert closed["second_close"] is None, (
        f"SM-R-4 violated: a second close() of a {state} receiver raised {closed['second_close']}")
    calls = w.call("closed_calls")
    wrong = {name: calls[name] for name in ("poll", "connect", "reading")
             if calls[name] is None or not calls[name].isa("ClosedError")}
    assert not wrong, f"SM-R-4, LIFE-6 violated: after close() of a {state} receiver these calls did not raise " \
                      f"ClosedError: {wrong}"


# ---- clauses of WIRE-2, WIRE-3, WIRE-4, WIRE-7, SEC-3 and API-12 that need a condition of their own ----


@pytest.mark.req("WIRE-4", "SM-R-7")
def test_a_control_message_cut_short_is_a_violation(sender, subject):
    """A Receive introducing 250 slots, with 253 descriptors (the kernel's most per message) on its first byte:
    more than a receiver's control buffer for WIRE-4's 250 holds, so the kernel cuts the control message
    (MSG_CTRUNC), a violation; a receiver whose buffer takes 253 finds three handles queued beyond what the frame
    lists, a violation too. Either way it closes unanswered; only a receiver that ignores MSG_CTRUNC finds its 250
    handles and acks."""
    session, manifest, nbytes = _handshake(sender, subject, arrays(0))
    fd = sender.slot(1, layout(arrays(1))[1], nbytes)
    receive = {"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(s, nbytes) for s in range(1, 251)]}
    session.send(receive, fds=[fd] * 253)
    _cut_off(session, subject, "253 descriptors on one byte of a frame listing 250 slots", [0])


@pytest.mark.waits(10)
@pytest.mark.req("WIRE-7", "SM-R-7")
@pytest.mark.needs("pull")
def test_a_pull_receiver_judges_a_frame_cut_short_when_it_next_reads(sender, request):
    """A pull receiver reads ten bytes of a Receive in one poll(); the rest never comes. Once more than the frame
    bound (10 s) has passed since that first byte, one byte more arrives (not the last) and poll() reads it: the
    frame is overdue counted from its first byte, so that poll() raises RemoteProtocolError and the receiver closes
    its channel (WIRE-7: a pull receiver judges it when it next reads)."""
    if request.config.getoption("--receiver-cmd"):
        pytest.skip("poll() is the Python binding's; an outside program is judged on the wire")
    w, session = _live_pull_worker(sender, request)
    whole = frame(pack({"type": "Receive", "version": 1, "slot": 0, "new_slots": []}))
    t0 = time.monotonic()
    session.send_raw(whole[:10])
    status, value = w.outcome("poll", 0.5, bound=0.5 + tm.SLACK + answer_bound())
    assert (status, value) == ("ok", None), (
        f"WIRE-7 violated: poll(0.5) with ten bytes of a frame pending gave {status} {value} (within the frame "
        "bound a frame cut short is no violation yet, and no version)")
    late = t0 + tm.FRAME_BOUND + 1.0
    session.closed_by_peer(max(0.0, late - time.monotonic()))  # the bound passes; a receiver MAY close by then
    try:
        session.send_raw(whole[10:11])
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, value = w.outcome("poll", 0.0, bound=tm.SLACK + answer_bound())
    assert status == "err" and value.isa("RemoteProtocolError"), (
        f"WIRE-7 violated: poll() {time.monotonic() - t0:.1f} s after a frame's first byte, its last never come, gave "
        f"{status} {value}, not RemoteProtocolError (a pull receiver counts from the first byte it read)")
    _closes(session, "a frame unfinished past the frame bound", rule="WIRE-7")


#: Values exactly at a bound of WIRE-3 (a name of 4,096 bytes of UTF-8, 64 dimensions), as arrays beside ARRAYS'.
AT_BOUNDS = [("\u00e9" * 2047 + "ab", "int16", (1,) * 64, b"\x01\x02"), ("x" * 4096, "uint8", (2, 2, 2), b"\x07" * 8)]
#: An ipc list of exactly 16 values, each of a kind WIRE-3 allows, its str and bins of exactly 4,096 bytes.
IPC_AT_BOUND = [None, True, 2**63 - 1, "s" * 4096, b"\xab" * 4096] + [b"\x00" * 4096] * 11


@pytest.mark.req("WIRE-3", "INIT-4", "ACK-1", "ACK-3")
@pytest.mark.parametrize("at", ["a name and a shape", "an ipc list"])
def test_values_exactly_at_the_bounds_are_taken(sender, subject, at):
    """Values exactly at WIRE-3's bounds, none past them, make a legal frame. "a name and a shape": the manifest
    holds names of exactly 4,096 bytes (one of two-byte characters) and an array of 64 dimensions; the receiver
    answers Ready(ok), applies a Receive and reports both versions bit for bit. "an ipc list": beside the CPU slot
    the Init lists a CUDA slot whose ipc holds exactly 16 values, its str and bins 4,096 bytes each; the receiver
    answers Ready, ok or error (a refusal of a device it cannot map is an answer: it decoded the Init), where a
    receiver that took a value at the bound for one past it would close its channel unanswered."""
    assert all(len(n.encode()) == 4096 for n, *_ in AT_BOUNDS) and len(IPC_AT_BOUND) == 16
    wide = at == "a name and a shape"
    arrs0, arrs1 = arrays(0), arrays(1)
    if wide:
        arrs0 = arrs0 + AT_BOUNDS
        arrs1 = arrs1 + [(n, d, s, bytes(b ^ 0xFF for b in raw)) for n, d, s, raw in AT_BOUNDS]
    subject.start(sender.url(0))
    session = sender.accept(start_bound())
    manifest, data, nbytes = layout(arrs0)
    slots = [slotinfo(0, nbytes)] + ([] if wide else [{"slot": 9, "device": "cuda:0", "nbytes": nbytes,
                                                         "ipc": IPC_AT_BOUND}])
    session.send(init(0, manifest, slots, 0, 0), fds=[sender.slot(0, data, nbytes)])
    ready, _ = _expect(session, "Ready", "WIRE-3")
    if not wide:
        try:
            session.send({"type": "Stop"})
        except (BrokenPipeError, ConnectionResetError):
            pass  # a receiver that refused its Init (Ready(error)) moved to failed and may have closed already
        out = subject.finish()
        assert ready["status"] == "ok" or not out["applied"], (
            f"INIT-6 violated: a receiver that refused its Init ({ready!r:.200}) reports {out['applied']}")
        return
    assert (ready["status"], ready["version"]) == ("ok", 0), (
        f"WIRE-3 violated: an Init whose names and shape are exactly at the bounds got {ready!r:.300}")
    fd1 = sender.slot(1, layout(arrs1)[1], nbytes)
    session.send({"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, nbytes)]}, fds=[fd1])
    ack, _ = _expect(session, "Ack", "ACK-1")
    assert (ack["version"], ack["status"]) == (1, "ok"), f"ACK-1 violated: {ack}"
    session.send({"type": "Stop"})
    out = subject.finish()
    published = {0: digest(arrs0), 1: digest(arrs1)}
    assert out["applied"] and out["applied"][-1] == (1, published[1]), (
        f"ACK-3 violated: the receiver reports {out['applied']}, not version 1 as published")
    for v, d in out["applied"]:
        assert published.get(v) == d, (f"WIRE-3 violated: version {v}, whose names and shape are at the bounds, is "
                                       "not held bit for bit")


def _peak_bytes(subject) -> int | None:
    """The receiver process's peak virtual memory (VmPeak), in bytes: an allocation counts there whether or not it
    is ever touched; None where it cannot be read."""
    pid = subject.worker.pid if subject.worker is not None else subject.proc.pid if subject.proc is not None else None
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmPeak:"))
    except (OSError, StopIteration, ValueError, TypeError):
        return None


#: What a receiver's process may grow by, in peak virtual memory, while it reads a few bytes and closes its channel:
#: far below the 2 GiB each frame below announces, far above what a thread or an arena adds.
ALLOCATION_SLACK = 1 << 30

#: Frames a few bytes long that announce far more than they hold (name: bytes after the handshake, the rule).
AMPLIFIERS = {
    "a length prefix of 2 GiB": (b"\x7f\xff\xff\xff", "WIRE-2"),
    "an array header announcing 2**31 items": (frame(b"\xdd\x80\x00\x00\x00"), "WIRE-3"),
    "a map nested 100000 deep": (frame(b"\x81\xa1a" * 100_000 + b"\xc0"), "WIRE-3"),
}


@pytest.mark.req("SEC-1", "WIRE-2", "WIRE-3", "SM-R-7")
@pytest.mark.parametrize("case", sorted(AMPLIFIERS))
def test_a_frame_that_announces_more_than_it_holds_costs_the_receiver_nothing(sender, subject, case):
    """After the handshake, a length prefix of 2 GiB with no payload (WIRE-2), a 5-byte frame whose array header
    announces 2**31 items, or a frame of maps nested 100,000 deep (300 KB, within the bound): each is a violation,
    so the receiver closes its channel unanswered, applies nothing more, and the binding's ends with a
    RemoteProtocolError, not another error (SEC-1: never a crash); and its process's peak virtual memory grows by
    far less than the 2 GiB announced (WIRE-2, SEC-1: nothing allocated for what the frame does not hold; an
    allocation counts there even if never touched)."""
    data, rule = AMPLIFIERS[case]
    session, _, _ = _handshake(sender, subject, arrays(0))
    before = _peak_bytes(subject)
    session.send_raw(data)
    bound = tm.REACTION + tm.SLACK
    try:
        msg = session.answer_before_close(bound, ignore=("Heartbeat",))
    except HarnessError:
        raise TooSlow(f"SM-R-7 violated: the receiver kept its channel open {bound:.0f} s after {case}") from None
    after = _peak_bytes(subject)  # read while its process still runs (a program exits once it stopped)
    assert msg is None, f"{rule} violated: the receiver answered {case} with {msg!r:.300}"
    _cut_off(session, subject, case, [0])
    if before is None or after is None:
        pytest.skip("the receiver's process memory cannot be read here (/proc)")
    assert after - before < ALLOCATION_SLACK, (
        f"{rule}, SEC-1 violated: reading {case} the receiver's peak virtual memory grew by "
        f"{(after - before) / 2**30:.1f} GiB: it allocated for what the frame announced, not what it holds")


def _unread(session) -> int:
    """Bytes the receiver wrote that this end has not read (SIOCINQ: the whole stream's queue on a Unix socket)."""
    import array
    import fcntl
    import termios

    buf = array.array("i", [0])
    fcntl.ioctl(session.sock.fileno(), termios.FIONREAD, buf)
    return buf[0]


def _hung_up_within(session, bound: float) -> bool:
    """Whether the receiver closed its end within `bound`, without reading what it wrote before."""
    import select

    p = select.poll()
    p.register(session.sock, select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0x2000))
    return bool(p.poll(bound * 1000.0))


#: How long the scripted sender leaves its channel unread once the receiver's Acks no longer fit: a few seconds,
#: well within the reaction bound after which a receiver MAY take it for gone.
UNREAD_FOR = 3.0


@pytest.mark.req("SEC-3", "ACK-1", "ACK-2", "ACK-3")
def test_a_sender_that_reads_nothing_for_a_few_seconds_is_not_taken_for_gone(sender, subject):
    """The scripted sender stops reading its channel and sends Receives one by one (two slots in turn) until the
    receiver's Acks no longer fit in the socket (the bytes left unread stop growing for a second while Receives
    keep coming); then it reads nothing for three seconds more, well within the reaction bound. The receiver must
    not take it for gone (SEC-3): it keeps its channel open, and once read, its Acks answer every version up to
    the last (ACK-2); after Stop it reports that version bit for bit."""
    import socket

    v0, v1 = arrays(0), arrays(1)
    session, manifest, nbytes = _handshake(sender, subject, v0)
    _receive(sender, session, 1, v1, nbytes)
    _acks_up_to(session, 1, {1}, "after Receive(1)")
    published = {0: digest(v0), 1: digest(v1)}
    unread_since = grew_at = time.monotonic()
    last, blocked = 1, False
    end = time.monotonic() + answer_bound()
    while time.monotonic() < end and last < 5000:
        data = frame(pack({"type": "Receive", "version": last + 1, "slot": (last + 1) % 2, "new_slots": []}))
        try:
            n = session.sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            n = 0
        if n and n < len(data):
            session.send_raw(data[n:])  # the rest of a frame begun (WIRE-7), a few bytes
        if n:
            last += 1
        if _grows(session, _unread(session), 0.2):
            grew_at = time.monotonic()
        if time.monotonic() - grew_at >= 1.0:
            blocked = True
            break
    if not blocked:
        checked_nothing(f"the receiver's unread Acks kept growing through {last - 1} Receives: its writes never "
                        "filled the channel, so nothing showed it with Acks to write to a sender not reading")
    occurred("SEC-3.d")
    assert not _hung_up_within(session, UNREAD_FOR), (
        f"SEC-3 violated: the receiver closed its channel while the sender had read nothing for "
        f"{time.monotonic() - unread_since:.1f} s, its Acks filling the channel for {time.monotonic() - grew_at:.1f} s, "
        "less than the reaction bound")
    for v in range(2, last + 1):
        published[v] = published[v % 2]
    acked = []
    while not acked or acked[-1] < last:
        try:
            ack, _ = session.recv_past_heartbeats(answer_bound())
        except HarnessError:
            raise TooSlow(f"ACK-1 violated: no Ack up to {last} once the sender read again (acked {acked[-3:]})") \
                from None
        except (PeerClosed, ConnectionResetError):
            raise AssertionError(f"SEC-3 violated: the receiver closed its channel after the sender read nothing for "
                                 f"{UNREAD_FOR:.0f} s, with Acks up to {acked[-1:]} written") from None
        assert ack.get("type") == "Ack" and ack["status"] == "ok", f"ACK-1 violated: {ack!r:.200}"
        assert not acked or ack["version"] > acked[-1], f"ACK-2 violated: Ack {ack['version']} after {acked[-1]}"
        acked.append(ack["version"])
    session.send({"type": "Stop"})
    out = subject.finish()
    assert out["stopped"], f"SM-R-3 violated: after Stop the receiver did not stop: {out['error']}"
    assert out["applied"] and out["applied"][-1] == (last, published[last]), (
        f"ACK-3 violated: the receiver ends at {out['applied'][-1:]}, not version {last} as acked")
    wrong = [v for v, d in out["applied"] if published.get(v) != d]
    assert not wrong, f"ACK-3 violated: versions {wrong[:5]} are not held as published"


def _grows(session, before: int, bound: float) -> bool:
    """Whether the receiver's unread bytes grow past `before` within `bound` seconds."""
    end = time.monotonic() + bound
    while True:
        if _unread(session) > before:
            return True
        left = end - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(0.005, left))  # not a bound: the queue is looked at again until `bound` passes


def check_one_role_exports(config, role: str) -> None:
    """API-12: a module that names `role` alone in CAPABILITIES exports that role's class, every error class of
    section 10.3 and CAPABILITIES. conftest refuses to run a module that lacks one of those names (a usage error);
    this checks what they are, as test_binding.py does for a module of both roles, which it alone is run for."""
    from .conftest import _program, impl
    from .names import ERROR_NAMES, ROLES, roles

    if _program(config):
        pytest.skip("a program is judged on the wire; it exports nothing")
    ws = impl(config)
    if roles(ws.CAPABILITIES) != {role}:
        pytest.skip("the module implements both roles: test_binding.py checks what it exports")
    other = next(r for r in ROLES if r != role)
    caps = ws.CAPABILITIES
    assert isinstance(caps, frozenset) and role in caps and other not in caps, (
        f"API-12 violated: a {role}-only module's CAPABILITIES is {caps!r}")
    cls = role.capitalize()
    assert isinstance(getattr(ws, cls, None), type), (
        f"API-12 violated: CAPABILITIES names {role!r} alone, and {cls} is {getattr(ws, cls, None)!r}, not a class")
    base = getattr(ws, "WeightSyncError", None)
    bad = {n: getattr(ws, n, None) for n in ERROR_NAMES
           if not (isinstance(getattr(ws, n, None), type) and isinstance(base, type)
                   and issubclass(getattr(ws, n), base) and issubclass(base, Exception))}
    assert not bad, f"API-12, API-4 violated: a {role}-only module exports these as no error class of 10.3: {bad}"


@pytest.mark.req("API-12")
def test_a_receiver_only_module_exports_its_class_the_errors_and_capabilities(request):
    """Run for a module that names 'receiver' alone (conftest then runs this file only)."""
    check_one_role_exports(request.config, "receiver")
