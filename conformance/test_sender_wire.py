"""A sender in any language against the suite's scripted receivers (spec sections 3-9, 12-14).

The sender under test is a program given with `--sender-cmd "PROGRAM {layout}
{receivers}"` that follows the sender test-control contract of docs/conformance.md:
it holds the weights of seed 0, listens, prints a URL per receiver, and answers one
line per command (connect, send, async, wait, drop, close). The suite's scripted
receivers (peers.Joiner) join it by URL as any worker would, and only what they see
on the wire and what the program prints is judged, so a trainer written in C++, Rust
or over NumPy is held to exactly what the reference is. This module is collected with
--sender-cmd, and for a sender-only module (API-12), whose Sender is then driven by
conformance/senders/reference_sender.py; a module of both roles has its Sender checked
over the wire by test_wire.py instead.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import shlex
import subprocess
import sys
import threading
import time

import pytest

from . import timing as tm
from .clauses import occurred
from .conftest import sender_command
from .peers import (
    FIELDS,
    HEARTBEAT,
    ITEMSIZE,
    SLOTINFO,
    Joiner,
    PeerClosed,
    ack,
    canonical,
    check_sealed,
    frame,
    pack,
    padded,
    ready,
    slot_bytes,
    with_odd_fields,
)
from .test_receiver_wire import ARRAYS, answer_bound, check_one_role_exports, start_bound
from .verdict import HarnessError, Inconclusive, TooSlow, checked_nothing, in_time
from .wire_schema import negative, negatives

#: Receivers join by URL: a sender-only module without `rendezvous` has no way in for them.
pytestmark = pytest.mark.needs("rendezvous", "wire")
RECEIVERS = 2
#: Arrays of a megabyte and more, so that a slot write takes long enough to be seen.
LARGE = [("big", "float32", (512, 1024)), ("small", "int8", (3,)), ("bias", "bfloat16", (300_000,))]


def seeded(seed: int, arrays) -> list[bytes]:
    """Each array's bytes for `seed`, as the contract defines them: SHAKE-128 of "SEED NAME", bool mod 2."""
    out = []
    for name, dtype, shape in arrays:
        raw = hashlib.shake_128(f"{seed} {name}".encode()).digest(math.prod(shape) * ITEMSIZE[dtype])
        out.append(bytes(b & 1 for b in raw) if dtype == "bool" else raw)
    return out


class Program:
    """The sender program under test: started, asked one command at a time, closed."""

    def __init__(self, cmd: str, directory, arrays=ARRAYS, receivers: int = RECEIVERS, env=None):
        self.arrays = arrays
        path = directory / "layout.json"
        path.write_text(json.dumps([[n, d, list(s)] for n, d, s in arrays]))
        argv = [a.replace("{layout}", str(path)).replace("{receivers}", str(receivers)) for a in shlex.split(cmd)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="conformance-sender-program").start()
        self.urls: dict[int, str] = {}
        while (line := self.line(start_bound(), "start and print its URLs")) != "listening":
            word, rid, url = line.split(" ", 2)
            assert word == "url", f"the sender program printed {line!r} before 'listening' (the contract: url ID URL)"
            self.urls[int(rid)] = url
        assert sorted(self.urls) == list(range(receivers)), (
            f"the sender program printed URLs for receivers {sorted(self.urls)}, not 0..{receivers - 1}")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self, bound: float, doing: str) -> str:
        try:
            line = self.lines.get(timeout=bound)
        except queue.Empty:
            raise HarnessError(f"the sender program did not {doing} within {bound:.0f} s") from None
        if line is None:  # its output ended: it exited, or is about to
            try:
                status = self.proc.wait(tm.REACTION)
            except subprocess.TimeoutExpired:
                status = "none yet: it closed its output"
            raise AssertionError(f"the sender program exited (status {status}) instead of answering ({doing})")
        return line

    def ask(self, command: str, bound: float | None = None) -> str:
        """The program's answer to `command` (one line)."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.line(answer_bound() if bound is None else bound, f"answer {command!r}")

    def join(self, rid: int, url: str | None = None) -> Joiner:
        """A scripted receiver joined as `rid` and welcomed (RDV-3: Welcome proves the secret); Init not read yet."""
        peer = Joiner(url or self.urls[rid], bound=answer_bound())
        answer = peer.join(answer_bound())
        assert answer.get("type") == "Welcome", f"RDV-3 violated: a Join with the right secret got {answer}"
        assert peer.welcome_ok(answer), "RDV-3 violated: Welcome's proof is not HMAC(secret, ...) as specified"
        return peer

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(tm.REACTION)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def program(request, tmp_path):
    """Starts the program; `program(arrays=..., receivers=...)` for another layout. Killed at teardown."""
    made = []
    cmd = sender_command(request.config)
    # The binding's sender program imports the module under test from wherever this process can.
    env = None if request.config.getoption("--sender-cmd") else \
        dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def start(arrays=ARRAYS, receivers=RECEIVERS) -> Program:
        p = Program(cmd, tmp_path, arrays, receivers, env)
        made.append(p)
        return p

    yield start
    for p in made:
        p.close()


@pytest.fixture
def peers():
    """Scripted receivers made by a test, closed at teardown."""
    made: list[Joiner] = []
    yield made
    for p in made:
        p.close()


# ---- what every scripted receiver checks ----------------------------------------------------------


def check_init(peer: Joiner, arrays, rid: int) -> dict:
    """Reads Init and checks its fields, manifest and slots against the layout (INIT-1, MSG-1, LAYOUT-1)."""
    msg, fds = peer.expect("Init", answer_bound())
    missing = [f for f in FIELDS["Init"] if f not in msg]
    assert not missing, f"MSG-1 violated: Init lacks {missing}"
    assert str(msg["protocol"]).split(".")[0] == "1", f"INIT-1 violated: Init speaks protocol {msg['protocol']!r}"
    assert msg["receiver"] == rid, f"MSG-2 violated: receiver {rid}'s Init names receiver {msg['receiver']}"
    manifest = msg["manifest"]
    listed = [(e["name"], e["dtype"], list(e["shape"])) for e in manifest]
    layout = [(n, d, list(s)) for n, d, s in arrays]
    assert listed == layout, f"INIT-1 violated: the manifest lists {listed}, the layout {layout}"
    end = 0
    for e, (_, dtype, shape) in zip(manifest, arrays):
        assert e["offset"] % 64 == 0 and e["offset"] >= end, (
            f"LAYOUT-1 violated: {e['name']} at offset {e['offset']} (not a multiple of 64, or before the end of "
            f"the array before it, {end})")
        assert e["nbytes"] == math.prod(shape) * ITEMSIZE[dtype], (
            f"INIT-1 violated: {e['name']} has nbytes {e['nbytes']}, {dtype}{list(shape)} is "
            f"{math.prod(shape) * ITEMSIZE[dtype]}")
        end = e["offset"] + e["nbytes"]
    peer.take_slots(msg["slots"], fds)
    for s in msg["slots"]:
        assert [k for k in SLOTINFO if k in s] == list(SLOTINFO), f"MSG-1 violated: SlotInfo {s} lacks fields"
        assert s["nbytes"] >= end, f"INIT-1 violated: slot {s['slot']} of {s['nbytes']} bytes holds {end} bytes"
    assert msg["slot"] in peer.slot_fds, (
        f"SLOT-1 violated: Init names slot {msg['slot']} but carries handles for {sorted(peer.slot_fds)}")
    peer.init = msg
    peer.seen_slots = {s["slot"] for s in msg["slots"]}
    peer.named = [msg["version"]]
    return msg


def check_bytes(peer: Joiner, slot: int, seed: int, arrays, rule: str, what: str) -> None:
    got, want = slot_bytes(peer, slot), seeded(seed, arrays)
    bad = [e["name"] for e, g, w in zip(peer.init["manifest"], got, want) if g != w]
    assert not bad, f"{rule} violated: {what}: slot {slot} holds other bytes than seed {seed}'s for {bad}"


def next_receive(peer: Joiner, bound: float | None = None) -> dict:
    """The next Receive past Heartbeats, checked: fields, a newer version, slots introduced once (VER-3, SLOT-5)."""
    msg, fds = peer.recv_past_heartbeats(answer_bound() if bound is None else bound)
    assert msg.get("type") == "Receive", f"MSG-1 violated: expected a Receive, got {msg!r:.200}"
    missing = [f for f in FIELDS["Receive"] if f not in msg]
    assert not missing, f"VER-4, MSG-1 violated: a Receive lacks {missing}: {msg!r:.200}"
    assert isinstance(msg["version"], int) and msg["version"] > max(peer.named), (
        f"VER-3 violated: a Receive of version {msg['version']} after versions {peer.named} on this channel")
    again = {s["slot"] for s in msg["new_slots"]} & peer.seen_slots
    assert not again, f"SLOT-5 violated: slots {sorted(again)} introduced a second time"
    peer.take_slots(msg["new_slots"], fds)
    peer.seen_slots |= {s["slot"] for s in msg["new_slots"]}
    assert msg["slot"] in peer.slot_fds, f"SLOT-1 violated: a Receive names slot {msg['slot']} before its handle came"
    peer.named.append(msg["version"])
    return msg


def all_canonical(peer: Joiner) -> None:
    for payload in peer.frames_in:
        assert payload == canonical(payload), f"WIRE-5 violated: a frame not in canonical form: {payload[:60].hex()}"


def arrive(program: Program, peers: list, rid: int) -> Joiner:
    """Scripted receiver `rid` joined and its Init checked (seed 0, version 0, its bytes); no Ready sent yet."""
    peer = program.join(rid)
    peers.append(peer)
    init = check_init(peer, program.arrays, rid)
    assert init["version"] == 0, f"VER-1 violated: the first Init carries version {init['version']}, not 0"
    check_bytes(peer, init["slot"], 0, program.arrays, "INIT-1", "version 0 in the Init's slot")
    return peer


def joined(program: Program, peers: list, n: int = RECEIVERS, holds=()) -> list[Joiner]:
    """n scripted receivers joined, Inits checked (seed 0, version 0), Ready sent, `connect` answered."""
    made = []
    for rid in range(n):
        peer = arrive(program, peers, rid)
        peer.send(ready(rid, 0, holds_slot=rid in holds))
        made.append(peer)
    answer = program.ask(f"connect {tm.T:g}", tm.T + tm.SLACK + answer_bound())
    assert answer == "connected", f"INIT-5 violated: every receiver answered Ready, yet connect answered {answer!r}"
    return made


def published(answer: str) -> int:
    """V of a `published V` answer."""
    parts = answer.split()
    assert len(parts) >= 2 and parts[0] == "published", f"the sender program answered {answer!r}, expected 'published V'"
    return int(parts[1])


def failed(answer: str, rule: str | None = None) -> tuple[int | None, dict[int, str]]:
    """(version, {receiver: cause}) of a `failed V ID=CAUSE ...` answer; another answer violates `rule` when given
    (the requirement that says this call must fail), else it breaks the contract (no requirement: inconclusive)."""
    parts = answer.split()
    blame = f"{rule} violated: " if rule else ""
    assert parts and parts[0] == "failed", f"{blame}the sender program answered {answer!r}, expected 'failed V ID=CAUSE ...'"
    causes = {int(k): v for k, _, v in (p.partition("=") for p in parts[2:])}
    return (None if parts[1] in ("connect", "None") else int(parts[1])), causes


def deliver(p: Program, seed: int, targets: dict[int, Joiner], rule: str = "SEND-1", expected: int | None = None) -> int:
    """`async SEED` to `targets` (receiver id -> its scripted receiver; all of them send to every receiver), each
    receives it, finds seed's bytes in the slot named and acks ok; the wait must return. The version published."""
    ids = "" if len(targets) == len(p.urls) else " " + " ".join(map(str, sorted(targets)))
    v = published(p.ask(f"async {seed}{ids}", tm.T + tm.SLACK + answer_bound()))
    assert expected is None or v == expected, f"VER-2 violated: version {v} published where {expected} was next"
    for rid, peer in sorted(targets.items()):
        m = next_receive(peer)
        assert m["version"] == v, f"VER-4 violated: the Receive of version {v} names version {m['version']}"
        check_bytes(peer, m["slot"], seed, p.arrays, "SLOT-1", f"version {v}")
        peer.send(ack(rid, v))
    answer = p.ask(f"wait {v} {tm.T:g}")
    assert answer == f"returned {v}", f"{rule} violated: every target acked version {v}, and the send said {answer!r}"
    return v


# ---- the tests ---------------------------------------------------------------------------------------


@pytest.mark.req("RDV-1", "RDV-3", "INIT-1", "MSG-1", "LAYOUT-1", "VER-1", "WIRE-5", "WIRE-8")
def test_a_joined_receiver_gets_the_layout_and_version_0(program, peers):
    """Every dtype of Table 12-2: the manifest in layout order, 64-byte offsets, seed 0's bytes in the Init's slot."""
    p = program()
    for peer in joined(p, peers):
        assert peer.init["byteorder"] in ("little", "big"), f"WIRE-8 violated: byteorder {peer.init['byteorder']!r}"
        all_canonical(peer)


@pytest.mark.req("VER-1", "VER-3", "VER-4", "SEND-1", "SLOT-1", "SLOT-2", "SLOT-5", "WIRE-4", "WIRE-5", "MSG-1")
def test_versions_arrive_in_order_bit_for_bit_and_a_send_returns_after_every_ack(program, peers):
    p = program()
    a, b = joined(p, peers)
    latest = a.init["slot"]
    for step, seed in enumerate((11, 12, 13, 14, 15), start=1):
        v = published(p.ask(f"async {seed}"))
        assert v == step, f"VER-1 violated: send number {step} published version {v}"
        for peer in (a, b):
            m = next_receive(peer)
            assert m["version"] == v, f"VER-4 violated: the Receive of version {v} names version {m['version']}"
            assert m["slot"] != latest, (f"SLOT-2 violated: version {v} was written into slot {latest}, which held "
                                         f"version {v - 1}, the latest published (a joiner may be reading it)")
            check_bytes(peer, m["slot"], seed, p.arrays, "SLOT-1", f"the slot named for version {v}")
        latest = m["slot"]
        a.send(ack(0, v))
        # One target acked: the send has not returned (SEND-1). A short look, not a bound.
        early = p.ask(f"wait {v} {tm.SHORT:g}", tm.SHORT + tm.SLACK + answer_bound())
        assert early.startswith("failed"), f"SEND-1 violated: the send of {v} returned ({early!r}) before receiver 1 acked"
        assert failed(early, "SEND-1")[1] == {1: "timeout"}, f"SEND-7 violated: {early!r} should name receiver 1 as timeout only"
        b.send(ack(1, v))
        assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}", f"SEND-1 violated: both acked {v}, the send did not return"
    for peer in (a, b):
        all_canonical(peer)


@pytest.mark.req("ACK-2", "ACK-6", "VER-4", "SEND-5")
@pytest.mark.parametrize("status", ["ok", "error"])
def test_an_ack_answers_every_pending_receive_up_to_its_version(program, peers, status):
    """Three versions pending at both receivers; each acks only the newest, receiver 1 with `status`. An Ack(error)
    answers the older versions too (ACK-2): each of their sends fails at once naming receiver 1, none waits out
    its timeout (ACK-6)."""
    p = program()
    a, b = joined(p, peers)
    versions = [published(p.ask(f"async {seed}")) for seed in (21, 22, 23)]
    for peer, rid in ((a, 0), (b, 1)):
        for v in versions:
            assert next_receive(peer)["version"] == v
        peer.send(ack(rid, versions[-1], *(() if rid == 0 else (status, "could not apply"))))
    for v in versions:
        answer = p.ask(f"wait {v} {tm.T:g}", tm.T + tm.SLACK)
        if status == "ok":
            assert answer == f"returned {v}", f"ACK-2 violated: Ack({versions[-1]}) did not settle {v}: {answer!r}"
        else:
            version, causes = failed(answer, "ACK-2")
            assert (version, causes) == (v, {1: "error"}), (
                f"ACK-2 violated: receiver 1's Ack({versions[-1]}, error) answers version {v} too; its wait gave "
                f"{answer!r}, expected version {v} failed with receiver 1's error alone")


@pytest.mark.req("SLOT-2", "ZC-1", "ZC-2", "SEND-6")
def test_a_slot_a_zero_copy_receiver_holds_is_never_written(program, peers):
    """Receiver 0 holds the slot of its version (Ready holds_slot); sends to receiver 1 alone never touch it."""
    p = program(LARGE)
    a, b = joined(p, peers, holds={0})
    held, held_seed = a.init["slot"], 0
    for seed in range(31, 37):
        answer = p.ask(f"async {seed} 1")
        if answer.startswith("refused"):  # SLOT-3: at its slot bound a sender may publish nothing; never write it
            check_bytes(a, held, held_seed, p.arrays, "ZC-2", f"receiver 0 holds slot {held}")
            continue
        v = published(answer)
        m = next_receive(b)
        assert m["slot"] != held, f"ZC-2 violated: version {v} was written into slot {held}, which receiver 0 holds"
        check_bytes(a, held, held_seed, p.arrays, "ZC-2", f"receiver 0 holds slot {held} (version 0)")
        b.send(ack(1, v))
        assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}", f"SEND-1 violated: receiver 1 acked {v}"
    # Receiver 0 moves to the newest version: it now holds that slot and may hold no other.
    v = published(p.ask("async 40"))
    m = next_receive(a)
    next_receive(b)
    a.send(ack(0, v))
    b.send(ack(1, v))
    assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}"
    held, held_seed = m["slot"], 40
    for seed in range(41, 45):
        v = published(p.ask(f"async {seed} 1"))
        m = next_receive(b)
        assert m["slot"] != held, f"ZC-2 violated: version {v} was written into slot {held}, which receiver 0 holds"
        b.send(ack(1, v))
        assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}"
        check_bytes(a, held, held_seed, p.arrays, "ZC-2", f"receiver 0 holds slot {held}")


class Answering:
    """Receiver `rid` answers its next Receive from a thread (with `status`), while the program's send waits."""

    def __init__(self, peer: Joiner, rid: int, status: str = "ok", bound: float | None = None):
        self.received: dict | None = None
        self.error: BaseException | None = None

        def run():
            try:
                self.received = next_receive(peer, bound)
                peer.send(ack(rid, self.received["version"], status, "" if status == "ok" else "could not apply"))
            except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread by result()
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True, name=f"conformance-receiver-{rid}")
        self.thread.start()

    def nothing(self) -> None:
        """For a send that published nothing: no Receive may come; waits out the thread's bound."""
        self.thread.join(answer_bound())
        assert self.received is None, f"SEND-4 violated: a refused send reached receiver 0: {self.received!r:.120}"

    def result(self) -> dict:
        self.thread.join(answer_bound())
        if self.error is not None:
            raise self.error
        assert self.received is not None, "the scripted receiver got no Receive in time"
        return self.received


@pytest.mark.req("SEND-1", "CONS-5", "VER-3")
def test_a_send_returns_its_version_once_every_target_acked_and_reaches_only_its_targets(program, peers):
    p = program()
    a, b = joined(p, peers)
    both = [Answering(a, 0), Answering(b, 1)]
    answer = p.ask(f"send 51 {tm.T:g}", tm.T + tm.SLACK + answer_bound())
    assert [t.result()["version"] for t in both] == [1, 1]
    assert answer == "returned 1", f"SEND-1 violated: both receivers acked version 1, the send answered {answer!r}"
    only = Answering(a, 0)
    answer = p.ask(f"send 52 {tm.T:g} 0", tm.T + tm.SLACK + answer_bound())
    assert only.result()["version"] == 2 and answer == "returned 2", f"SEND-1 violated: {answer!r} to receiver 0's ack"
    with pytest.raises(HarnessError):  # receiver 1 was not a target of version 2 (SEND-6)
        msg = b.recv_past_heartbeats(tm.SHORT)
        raise AssertionError(f"CONS-5 violated: receiver 1 got {msg[0]!r:.120} from a send to receiver 0 alone")
    both = [Answering(a, 0), Answering(b, 1)]
    assert p.ask(f"send 53 {tm.T:g}", tm.T + tm.SLACK + answer_bound()) == "returned 3"
    assert [t.result()["version"] for t in both] == [3, 3], "VER-3 violated: the third send reached them as another version"


@pytest.mark.req("ACK-6", "SEND-2", "SEND-7")
def test_an_error_ack_fails_the_send_naming_that_receiver_alone(program, peers):
    p = program()
    a, b = joined(p, peers)
    v = published(p.ask("async 61"))
    next_receive(a)
    next_receive(b)
    a.send(ack(0, v))
    b.send(ack(1, v, "error", "could not apply"))
    version, causes = failed(p.ask(f"wait {v} {tm.T:g}"), "ACK-6")
    assert version == v and causes == {1: "error"}, f"SEND-7 violated: an Ack(error) from 1 gave {causes} for {version}"
    deliver(p, 62, {0: a, 1: b}, "ACK-6")  # an Ack(error) leaves the receiver live: the next version goes to it


@pytest.mark.req("SEND-3", "SEND-4", "SEND-7", "VER-2")
def test_a_receiver_that_dies_is_named_at_once_and_the_others_go_on(program, peers):
    p = program()
    a, b = joined(p, peers)
    v = published(p.ask("async 71"))
    next_receive(a)
    next_receive(b)
    a.send(ack(0, v))
    peers.remove(b)
    b.close()
    t0 = time.monotonic()
    try:
        answer = p.ask(f"wait {v} 120", tm.REACTION + tm.SLACK + tm.SLACK)
    except HarnessError:  # a death must be named within the reaction bound, not at the wait's timeout of 120 s
        raise TooSlow(f"SEND-3 violated: receiver 1's channel ended, and 'wait {v} 120' had no answer after "
                      f"{time.monotonic() - t0:.0f} s (reaction bound {tm.REACTION:g} s)") from None
    elapsed = time.monotonic() - t0
    version, causes = failed(answer, "SEND-3")
    assert version == v and causes == {1: "died"}, f"SEND-3 violated: receiver 1's channel ended; {answer!r}"
    in_time(elapsed <= tm.REACTION + tm.SLACK,
            f"SEND-3 violated: a receiver's death was reported after {elapsed:.1f} s (reaction bound {tm.REACTION:g} s)")
    for cmd in ("async 72 1", "async 73"):
        answer = p.ask(cmd)
        assert answer.startswith("refused"), f"SEND-4 violated: {cmd!r} targets receiver 1, which is gone: {answer!r}"
    deliver(p, 74, {0: a}, "SEND-3", expected=v + 1)  # the two refused sends consumed no version (VER-2)


@pytest.mark.req("SEND-2", "SEND-5", "VER-4")
def test_a_silent_receiver_times_out_in_its_bound_and_its_late_ack_still_counts(program, peers):
    p = program()
    a, b = joined(p, peers)
    first = Answering(a, 0)
    t0 = time.monotonic()
    answer = p.ask(f"send 81 {tm.TIMED:g}", tm.TIMED + tm.SLACK + answer_bound())
    elapsed = time.monotonic() - t0
    first.result()
    version, causes = failed(answer, "SEND-2")
    assert causes == {1: "timeout"}, f"SEND-7 violated: receiver 1 did not answer; the send said {answer!r}"
    assert elapsed >= tm.TIMED - tm.EARLY, f"SEND-2 violated: a send with timeout {tm.TIMED:g} gave up after {elapsed:.3f} s"
    in_time(elapsed <= tm.TIMED + tm.SLACK, f"SEND-2 violated: a send with timeout {tm.TIMED:g} s answered after "
            f"{elapsed:.1f} s")
    m = next_receive(b)
    assert m["version"] == version
    b.send(ack(1, version))  # late, but the version is still pending: wait() again settles it (SEND-5)
    assert p.ask(f"wait {version} {tm.T:g}") == f"returned {version}", "SEND-5 violated: a late Ack did not settle it"


#: What a hostile or broken receiver sends in place of its Ack: (name, bytes given the version, the rules).
ATTACKS = {
    "not MessagePack": (lambda v: frame(b"\xc1\xc1\xc1"), ("WIRE-3", "SM-S-9")),
    "a length above 64 KiB": (lambda v: (1 << 31).to_bytes(4, "big"), ("WIRE-2", "SM-S-9")),
    "an unknown message type": (lambda v: frame(pack({"type": "Nonsense", "version": v})), ("MSG-3", "SM-S-9")),
    "an Ack of a version not pending": (lambda v: frame(pack(ack(1, v + 5))), ("ACK-5", "SM-S-9")),
    "an Ack naming another receiver": (lambda v: frame(pack(ack(0, v))), ("MSG-2", "SM-S-9")),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.req("SM-S-9", "WIRE-2", "WIRE-3", "MSG-2", "MSG-3", "ACK-5")
def test_a_receiver_that_breaks_the_protocol_is_cut_off_alone(program, peers, attack):
    make, rules = ATTACKS[attack]
    p = program()
    a, b = joined(p, peers)
    v = published(p.ask("async 91"))
    next_receive(a)
    next_receive(b)
    b.send_raw(make(v))
    a.send(ack(0, v))
    version, causes = failed(p.ask(f"wait {v} {tm.T:g}", tm.T + tm.SLACK + answer_bound()), "SM-S-9")
    assert causes == {1: "violation"}, f"{rules[0]} violated: receiver 1 sent {attack}; the send said {causes}"
    assert b.closed_by_peer(tm.REACTION), f"SM-S-9 violated: receiver 1 sent {attack} and its channel stayed open"
    deliver(p, 92, {0: a}, "SM-S-9")  # receiver 0 is not held up


def _named_violation(answer: str, case: str) -> None:
    """The program's answer to the call that waited on receiver 0 after it sent `case`: `failed`, naming it alone
    with cause violation (WIRE-3, SM-S-9)."""
    said = f"WIRE-3 violated: receiver 0 sent {case}; the sender answered {answer!r}"
    assert answer.startswith("failed "), said
    assert failed(answer, "WIRE-3")[1] == {0: "violation"}, said


def _closed(peer: Joiner, case: str) -> None:
    """SM-S-9: the channel of the receiver that sent `case` is closed. Checked for the last case of a batch only:
    a sender may take up to the reaction bound to close a channel while no call runs (the reference a second),
    and the next case's join takes that receiver's place, closing it anyway (RDV-5)."""
    in_time(peer.closed_by_peer(tm.REACTION), f"SM-S-9 violated: after {case} the receiver's channel stayed open")


@pytest.mark.req("WIRE-3", "SM-S-9", "SEC-1", "RDV-5")
def test_answers_that_break_the_schema_are_violations(program, peers):
    """Every negative of Ready (answering the Init) and of Ack and Heartbeat (a Receive pending), made from Table
    12-1 by wire_schema.negatives, each sent by receiver 0 joined afresh (RDV-5: a join takes a failed
    receiver's place): the call waiting on it answers `failed` naming it with cause violation, and its channel
    is closed (_closed). One program for all the cases (a program's start is seconds); a failure names its case."""
    p = program(receivers=1)
    # connect without ids: it names receiver 0 whether the program read the bad answer before the command or during
    # it; with ids, a listening sender that already found it failed waits for a new join (RDV-5, INIT-5)
    connect = f"connect {tm.T:g}"
    for case, _, _ in negatives(ready(0, 0)):
        peer = p.join(0)
        peers.append(peer)
        init = check_init(peer, p.arrays, 0)
        payload, clause = negative(ready(0, init["version"]), case)
        peer.send(payload)
        occurred(clause)
        _named_violation(p.ask(connect, tm.T + tm.SLACK + answer_bound()), case)
    _closed(peer, case)
    for seed, (case, base) in enumerate(((c, b) for b in (ack(0, 1), HEARTBEAT) for c, _, _ in negatives(b)), 1):
        peer = p.join(0)
        peers.append(peer)
        peer.send(ready(0, check_init(peer, p.arrays, 0)["version"]))
        assert p.ask(connect, tm.T + tm.SLACK + answer_bound()) == "connected", "INIT-4 violated: a rejoined receiver"
        v = published(p.ask(f"async {seed}"))
        next_receive(peer)
        payload, clause = negative({**base, "version": v} if "version" in base else base, case)
        peer.send(payload)
        occurred(clause)
        _named_violation(p.ask(f"wait {v} {tm.T:g}", tm.T + tm.SLACK + answer_bound()), case)
    _closed(peer, case)


@pytest.mark.req("WIRE-3", "RDV-3")
def test_joins_that_break_the_schema_are_violations(program, peers):
    """Every negative of Join, made from Table 12-1 by wire_schema.negatives and sent by a joiner that holds the
    URL's secret: the sender answers no Welcome (a Refuse may come) and closes the connection (RDV-3); a right
    join then still gets in."""
    p = program(receivers=1)
    bound = tm.REACTION + tm.SLACK
    for case, _, _ in negatives({"type": "Join", "receiver": 0, "nonce": bytes(32), "proof": bytes(32)}):
        joiner = Joiner(p.urls[0], bound=answer_bound())
        peers.append(joiner)
        payload, clause = negative(joiner.join_message(), case)
        joiner.send(payload)
        occurred(clause)
        try:
            msg = joiner.answer_before_close(bound, ignore=("Refuse",))
        except HarnessError:
            raise TooSlow(f"RDV-3 violated: the sender kept a joining connection open {bound:.0f} s after {case}") from None
        assert msg is None, (f"WIRE-3 violated: the sender answered {case} with {msg.get('type')}; the frame is a "
                             "violation (RDV-3), after which it closes the connection")
    joined(p, peers, 1)


@pytest.mark.req("MSG-4")
def test_heartbeats_from_receivers_are_ignored(program, peers):
    p = program()
    for rid in range(RECEIVERS):
        peer = p.join(rid)
        peers.append(peer)
        check_init(peer, p.arrays, rid)
        peer.send(HEARTBEAT)
        peer.send(ready(rid, 0))
        peer.send(HEARTBEAT)
    assert p.ask(f"connect {tm.T:g}", tm.T + tm.SLACK + answer_bound()) == "connected", (
        "MSG-4 violated: receivers that sent Heartbeat around Ready did not connect")
    v = published(p.ask("async 101"))
    for rid, peer in enumerate(peers):
        next_receive(peer)
        peer.send(HEARTBEAT)
        peer.send(ack(rid, v))
    assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}", "MSG-4 violated: Heartbeat before an Ack broke the send"


@pytest.mark.req("LIFE-1", "LIFE-2", "RDV-5", "SLOT-5")
def test_a_receiver_that_left_joins_again_at_the_latest_version(program, peers):
    p = program()
    a, b = joined(p, peers)
    again = Joiner(p.urls[0], bound=answer_bound())
    peers.append(again)
    answer = again.join(answer_bound())
    assert answer.get("type") == "Refuse", f"RDV-5 violated: a second Join for live receiver 0 got {answer!r:.120}"
    peers.remove(b)
    b.close()
    for seed in (111, 112):
        v = deliver(p, seed, {0: a})
    b = p.join(1)
    peers.append(b)
    init = check_init(b, p.arrays, 1)
    assert init["version"] == v, f"LIFE-1 violated: a receiver joining after version {v} got version {init['version']}"
    check_bytes(b, init["slot"], 112, p.arrays, "LIFE-1", f"the Init of version {v}")
    b.send(ready(1, v))
    assert p.ask(f"connect {tm.T:g} 1", tm.T + tm.SLACK + answer_bound()) == "connected"
    deliver(p, 113, {0: a, 1: b}, "LIFE-2")


@pytest.mark.req("RDV-2", "RDV-4")
def test_a_join_with_a_wrong_secret_or_id_is_refused(program, peers):
    p = program()
    other_secret = bytes.fromhex(p.urls[1].rpartition("secret=")[2])
    for what, rid, secret in (("receiver 1's secret", 0, other_secret), ("an id that does not exist", 7, None)):
        peer = Joiner(p.urls[0], rid=rid, secret=secret, bound=answer_bound())
        peers.append(peer)
        answer = peer.join(answer_bound())
        assert answer.get("type") == "Refuse", f"RDV-4 violated: a Join as {rid} with {what} got {answer!r:.120}"
        assert peer.closed_by_peer(tm.REACTION), f"RDV-4 violated: after Refuse ({what}) the connection stayed open"
    joined(p, peers)  # the refused joins took nobody's place


@pytest.mark.req("LIFE-4", "MSG-1")
def test_close_sends_stop_to_every_receiver(program, peers):
    p = program()
    joined(p, peers)
    assert p.ask("close") == "closed"
    for rid, peer in enumerate(peers):
        try:
            msg, _ = peer.recv_past_heartbeats(tm.REACTION)
        except PeerClosed:
            raise AssertionError(f"LIFE-4 violated: receiver {rid}'s channel ended without Stop") from None
        assert msg.get("type") == "Stop", f"LIFE-4 violated: receiver {rid} got {msg!r:.120} at close, not Stop"
    try:
        status = p.proc.wait(answer_bound())
    except subprocess.TimeoutExpired:
        raise TooSlow("the sender program did not exit after 'close' (the contract)") from None
    assert status == 0, f"the sender program exited with status {status} after 'close'"


@pytest.mark.req("API-9", "SEND-3")
def test_drop_cuts_one_receiver_off(program, peers):
    p = program()
    a, b = joined(p, peers)
    v = published(p.ask("async 121"))
    next_receive(a)
    next_receive(b)
    a.send(ack(0, v))
    assert p.ask("drop 1") == "dropped 1"
    try:
        msg, _ = b.recv_past_heartbeats(tm.REACTION)
        assert msg.get("type") == "Stop", f"API-9 violated: a dropped receiver got {msg!r:.120}"
    except PeerClosed:
        pass  # Stop, or the end of the channel (API-9)
    version, causes = failed(p.ask(f"wait {v} {tm.T:g}"), "API-9")
    assert causes == {1: "died"}, f"API-9 violated: the version pending on a dropped receiver failed with {causes}"
    deliver(p, 122, {0: a}, "API-9")


@pytest.mark.req("SEC-4", "WIRE-4")
def test_slot_handles_are_read_only_and_sealed(program, peers):
    p = program(LARGE)
    a, b = joined(p, peers)
    deliver(p, 131, {0: a, 1: b})
    check_sealed(a.slot_fds)


@pytest.mark.req("INIT-5", "INIT-6")
def test_connect_names_a_receiver_that_never_answered_then_one_that_refused_its_init(program, peers):
    p = program()
    a, b = (arrive(p, peers, rid) for rid in range(RECEIVERS))
    a.send(ready(0, 0))
    t0 = time.monotonic()
    answer = p.ask(f"connect {tm.TIMED:g}", tm.TIMED + tm.SLACK + answer_bound())
    elapsed = time.monotonic() - t0
    assert failed(answer, "INIT-5")[1] == {1: "timeout"}, f"INIT-5 violated: receiver 1 never answered; connect said {answer!r}"
    assert elapsed >= tm.TIMED - tm.EARLY, f"INIT-5 violated: connect({tm.TIMED:g}) gave up after {elapsed:.3f} s"
    in_time(elapsed <= tm.TIMED + tm.SLACK, f"INIT-5 violated: connect({tm.TIMED:g}) answered after {elapsed:.1f} s")
    b.send(ready(1, None, "error", "cannot apply"))
    t0 = time.monotonic()
    answer = p.ask("connect 120", tm.REACTION + tm.SLACK + answer_bound())
    elapsed = time.monotonic() - t0
    assert failed(answer, "INIT-6")[1] == {1: "error"}, f"INIT-6 violated: receiver 1 answered Ready(error); connect: {answer!r}"
    in_time(elapsed <= tm.REACTION + tm.SLACK, f"INIT-5 violated: connect(120) took {elapsed:.1f} s to report a "
            "Ready(error) (the reaction bound, not the timeout)")


@pytest.mark.req("SEND-7")
@pytest.mark.parametrize("first", ["the Ack(error)", "the death"])
def test_receivers_that_fail_together_are_named_together(program, peers, first):
    """An Ack(error) and a death 0.2 s apart, either first: one answer names both, each with its cause (SEND-7's 1 s
    window opens at the first failure, whatever its kind). An answer naming one of them less than 1 s after the
    first was sent came inside that failure's window without the other's: a violation. Later, the sender may have
    read the second too late to name it (SEND-3 gives it time): inconclusive."""
    p = program()
    a, b = joined(p, peers)
    v = published(p.ask("async 141"))
    next_receive(a)
    next_receive(b)

    sent: list[float] = []
    steps = [lambda: a.send(ack(0, v, "error", "could not apply")), b.close]
    if first == "the death":
        steps.reverse()

    def fail_both():  # while the program waits: one failure, then 0.2 s later the other
        time.sleep(0.3)  # not a bound: the program has taken the wait command, as a rule
        sent.append(time.monotonic())
        steps[0]()
        time.sleep(0.2)
        steps[1]()
        sent.append(time.monotonic())

    failing = threading.Thread(target=fail_both, daemon=True, name="conformance-fail-both")
    failing.start()
    answer = p.ask(f"wait {v} {tm.T:g}", tm.T + tm.SLACK + answer_bound())
    answered = time.monotonic()
    failing.join(answer_bound())
    peers.remove(b)
    version, causes = failed(answer, "SEND-7")
    if len(sent) == 2 and sent[1] - sent[0] > 0.6:
        raise Inconclusive(f"this machine took {sent[1] - sent[0]:.1f} s between two failures meant to come 0.2 s "
                           "apart: too busy to test SEND-7's 1 s window")
    if len(causes) == 1:
        since = answered - sent[0] if sent else 0.0  # no failure sent yet: inside any window
        assert since >= 1.0 - tm.EARLY, (
            f"SEND-7 violated: the program answered {causes} {since:.2f} s after the first failure ({first}) was "
            "sent, inside its 1 s window, without the second (sent 0.2 s after it)")
        raise Inconclusive(f"the program named {causes} alone, {since:.1f} s after the first failure was sent: it "
                           "may have read the second after the window closed, as a busy sender may")
    if first == "the death":
        occurred("SEND-7.j")
    assert causes == {0: "error", 1: "died"}, f"SEND-7 violated: an error and a death 0.2 s apart gave {causes}"


@pytest.mark.req("WIRE-7", "SM-S-9")
@pytest.mark.waits(10)
def test_a_frame_cut_short_is_cut_off_and_holds_up_nobody_meanwhile(program, peers):
    """Receiver 1 sends the first bytes of a frame and stops; sends to receiver 0 go on meanwhile, and receiver 1
    is cut off within WIRE-7's 10 s (the spec's own bound, not scaled), named as a violation."""
    p = program()
    a, b = joined(p, peers)
    b.send_raw(bytes(2))  # half a length prefix, never finished
    started = time.monotonic()
    for seed in (151, 152):
        deliver(p, seed, {0: a}, "WIRE-7")  # a half frame from receiver 1 holds up no send to receiver 0
    closed = b.closed_by_peer(tm.FRAME_BOUND + tm.REACTION + tm.SLACK)
    elapsed = time.monotonic() - started
    assert closed, f"WIRE-7 violated: receiver 1's half frame was not cut off within {elapsed:.0f} s"
    deliver(p, 153, {0: a}, "WIRE-7")  # 1 is gone now: a send to it would be refused, to 0 it goes on


@pytest.mark.req("RDV-9")
def test_a_join_longer_than_the_bound_before_proof_ends_that_connection(program, peers):
    p = program()
    peer = Joiner(p.urls[0], bound=answer_bound())
    peers.append(peer)
    peer.send_raw((8193).to_bytes(4, "big"))  # a length over 8,192 bytes: no payload need follow
    assert peer.closed_by_peer(tm.REACTION), "RDV-9 violated: a Join frame announced at 8,193 bytes left the " \
        "connection open"
    joined(p, peers)  # the rendezvous still takes the right joins


@pytest.mark.req("API-9", "SLOT-2", "SLOT-3")
def test_drop_frees_the_slots_a_receiver_that_stopped_answering_pinned(program, peers):
    """Receiver 1 reads nothing and acks nothing: its pending versions pin slots, so sends run out of free ones
    (SLOT-3: refused, or published and failed for 1); once it is dropped, sends to receiver 0 go on."""
    p = program(LARGE)
    a, b = joined(p, peers)
    published_to_both = []
    for seed in range(161, 171):
        answering = Answering(a, 0, bound=tm.TIMED + tm.SLACK)  # a Receive comes within the send's bound or never
        answer = p.ask(f"send {seed} {tm.TIMED:g}", tm.TIMED + tm.SLACK + answer_bound())
        if answer.startswith("refused"):  # SLOT-3: no free slot within the send's timeout
            answering.nothing()
            break
        version, causes = failed(answer, "SEND-2")
        assert causes == {1: "timeout"}, f"SEND-2 violated: receiver 1 answers nothing, yet the send said {answer!r}"
        m = answering.result()
        check_bytes(a, m["slot"], seed, p.arrays, "SLOT-2", f"version {version}, with receiver 1's versions pinned")
        published_to_both.append(version)
    assert published_to_both, "the first send after connect was refused, with every slot free"
    assert p.ask("drop 1") == "dropped 1"
    for seed in (181, 182):
        deliver(p, seed, {0: a}, "API-9")  # the slots receiver 1 pinned are free again
    version, causes = failed(p.ask(f"wait {published_to_both[0]} {tm.T:g}"), "API-9")
    assert causes == {1: "died"}, f"API-9 violated: a version pending on a dropped receiver failed with {causes}"


@pytest.mark.req("WIRE-3", "WIRE-6", "SEND-6", "VER-2", "SM-S-2")
def test_unknown_fields_are_ignored_and_bad_targets_are_refused_without_a_version(program, peers):
    """A Ready and an Ack with fields of a later minor version (and odd MessagePack in them) count as usual, and so
    does a Ready(ok) of protocol 1.2, a later minor version of major 1 (WIRE-6; only another major is a violation,
    SM-S-2); a send to an id out of range or to no one publishes nothing and consumes no version."""
    p = program()
    for rid in range(RECEIVERS):
        peer = p.join(rid)
        peers.append(peer)
        check_init(peer, p.arrays, rid)
        peer.send({**ready(rid, 0), "protocol": "1.2", "capabilities": ["x-future"],
                   "x-future": {"a": [1, 2.5, None]}})
    answer = p.ask(f"connect {tm.T:g}", tm.T + tm.SLACK + answer_bound())
    assert answer == "connected", (
        f"WIRE-6, SM-S-2 violated: Readies(ok) of protocol 1.2 (a later minor version of major 1) carrying unknown "
        f"fields and capabilities were not taken: {answer!r}")
    for cmd in (f"async 191 {RECEIVERS}", "async 192 -1"):
        answer = p.ask(cmd)
        assert answer.startswith("refused"), f"SEND-6 violated: {cmd!r} names no receiver there is, yet {answer!r}"
    v = published(p.ask("async 193"))
    assert v == 1, f"VER-2 violated: refused sends consumed versions: the next one published {v}"
    for rid, peer in enumerate(peers):
        next_receive(peer)
        peer.send_raw(frame(with_odd_fields(ack(rid, v))))
    assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}", "WIRE-3 violated: Acks with unknown fields were not taken"


def _sent_beside(p: Program, a: Joiner, b: Joiner, slot: int, seeds, keeps: int, named: str) -> None:
    """`async SEED 0` for each seed, receiver 0 acking each while receiver 1 (`b`) has `slot` named to it by
    `named`: no version is written into that slot, which keeps seed `keeps`'s bytes (SLOT-2), and each wait returns."""
    for seed in seeds:
        answer = p.ask(f"async {seed} 0")
        if answer.startswith("refused"):  # SLOT-3: at its slot bound a sender may publish nothing
            continue
        v = published(answer)
        m = next_receive(a)
        assert m["slot"] != slot, f"SLOT-2 violated: version {v} was written into slot {slot}, which {named} names"
        check_bytes(b, slot, keeps, p.arrays, "SLOT-2", f"slot {slot}, named by {named}")
        a.send(ack(0, v))
        answer = p.ask(f"wait {v} {tm.T:g}")
        assert answer == f"returned {v}", f"SEND-1 violated: receiver 0 acked version {v}, yet wait answered {answer!r}"


@pytest.mark.req("SLOT-2", "SLOT-4", "ACK-1", "SLOT-1")
def test_a_slot_named_by_an_unanswered_receive_is_never_written(program, peers):
    """Receiver 1 takes its time over version 1: sends to receiver 0 alone meanwhile never touch version 1's slot,
    and receiver 1's late Ack still settles the send."""
    p = program(LARGE)
    a, b = joined(p, peers)
    v1 = published(p.ask("async 201"))
    next_receive(a)
    slot = next_receive(b)["slot"]
    a.send(ack(0, v1))
    _sent_beside(p, a, b, slot, range(202, 208), 201, f"receiver 1's unanswered Receive({v1})")
    b.send(ack(1, v1))
    assert p.ask(f"wait {v1} {tm.T:g}") == f"returned {v1}", "ACK-1 violated: receiver 1's late Ack did not settle it"


@pytest.mark.req("SLOT-2", "CONS-1")
def test_the_slot_of_an_unanswered_init_is_never_written(program, peers):
    """Receiver 1 takes its Init and holds its Ready while receiver 0, live, is sent one version after another,
    more than the sender has slots: none is written into the slot the Init names, whose bytes stay version 0's
    (SLOT-2.f: an unanswered Init pins its slot though newer versions were published and its receiver, still
    connecting, is sent none of them). Then receiver 1 answers, connects, and both are sent a version."""
    p = program(LARGE)
    a, b = _connected_after_holding_its_init(p, peers, range(231, 238))
    deliver(p, 240, {0: a, 1: b})


def _connected_after_holding_its_init(p: Program, peers: list, seeds) -> tuple[Joiner, Joiner]:
    """Receiver 0 live, receiver 1 holding its Init unanswered while receiver 0 is sent `seeds` (none may be written
    into the slot that Init names: SLOT-2.f); then receiver 1 answers and connects. Both scripted receivers."""
    a = arrive(p, peers, 0)
    a.send(ready(0, 0))
    b = arrive(p, peers, 1)
    answer = p.ask(f"connect {tm.T:g} 0", tm.T + tm.SLACK + answer_bound())
    assert answer == "connected", f"INIT-5 violated: receiver 0 answered Ready, yet connect answered {answer!r}"
    occurred("SLOT-2.f")
    _sent_beside(p, a, b, b.init["slot"], seeds, 0, "receiver 1's unanswered Init")
    b.send(ready(1, 0))
    answer = p.ask(f"connect {tm.T:g} 1", tm.T + tm.SLACK + answer_bound())
    assert answer == "connected", f"INIT-4 violated: receiver 1 answered its Init with Ready, yet connect answered {answer!r}"
    return a, b


@pytest.mark.req("SLOT-1", "SLOT-5")
def test_slots_made_while_a_receiver_connects_reach_it_before_a_receive_names_them(program, peers):
    """Receiver 1 holds its Ready while receiver 0 is sent version after version, so the sender may make slots that
    receiver 1's Init did not list. Once receiver 1 has connected, every version goes to both, receiver 0 leaving
    each unanswered (its Receives pin their slots, so each version takes another slot): each slot made meanwhile is
    named to receiver 1 at last, and its handle must come with the first Receive that names it (SLOT-1), not be
    taken as known because it existed when receiver 1 answered Ready."""
    p = program(LARGE)
    a, b = _connected_after_holding_its_init(p, peers, range(251, 258))
    meanwhile = a.seen_slots - b.seen_slots  # b has been named no version yet
    if not meanwhile:
        checked_nothing("the sender made no slot while receiver 1 was connecting (it reused the ones its Init listed)")
    last, named = None, set()
    for seed in range(261, 261 + len(a.seen_slots)):  # each pins one more slot: never past the slots there are
        if meanwhile <= named:
            break
        answer = p.ask(f"async {seed}", tm.T + tm.SLACK + answer_bound())
        if answer.startswith("refused"):  # SLOT-3: no free slot
            break
        last = published(answer)
        next_receive(a)  # left unanswered: its slot stays pinned
        m = next_receive(b)  # SLOT-1: the slot it names came in this Receive's new_slots, or earlier
        named.add(m["slot"])
        if m["slot"] in meanwhile:
            occurred("SLOT-1.g")
        check_bytes(b, m["slot"], seed, p.arrays, "SLOT-1", f"version {last}, to receiver 1")
        b.send(ack(1, last))
    if last is not None:
        a.send(ack(0, last))  # answers every version pending on receiver 0 (ACK-2)
        answer = p.ask(f"wait {last} {tm.T:g}")
        assert answer == f"returned {last}", f"ACK-2 violated: both receivers acked version {last}, and wait said {answer!r}"
    if not meanwhile & named:
        checked_nothing(f"no slot made while receiver 1 connected ({sorted(meanwhile)}) was named to it afterwards")


@pytest.mark.req("WIRE-2", "RDV-9")
def test_an_ack_of_exactly_the_frame_bound_is_read(program, peers):
    """65,536 bytes of payload is the largest frame a receiver may send (WIRE-2): it counts, it is no violation."""
    p = program()
    a, b = joined(p, peers)
    v = published(p.ask("async 211"))
    for rid, peer in ((0, a), (1, b)):
        next_receive(peer)
        peer.send_raw(frame(padded(ack(rid, v), 65536)))
    answer = p.ask(f"wait {v} {tm.T:g}")
    assert answer == f"returned {v}", (f"WIRE-2, RDV-9 violated: Acks of exactly 65,536 bytes of payload, from "
                                       f"receivers joined by URL, gave {answer!r}")


@pytest.mark.req("ZC-2", "ACK-6")
def test_an_error_ack_of_a_zero_copy_receiver_ends_no_hold(program, peers):
    """Receiver 0 (zero-copy) fails version 1: it may still read version 0's slot and version 1's, so sends to
    receiver 1 alone write neither until receiver 0 acks a version ok (ZC-2)."""
    p = program(LARGE)
    a, b = joined(p, peers, holds={0})
    old = a.init["slot"]
    v1 = published(p.ask("async 221"))
    failed_slot = next_receive(a)["slot"]
    next_receive(b)
    a.send(ack(0, v1, "error", "could not apply"))
    b.send(ack(1, v1))
    version, causes = failed(p.ask(f"wait {v1} {tm.T:g}"), "ACK-6")
    assert causes == {0: "error"}, f"ACK-6 violated: receiver 0's Ack(error) of {v1} gave {causes}"
    for seed in range(222, 228):
        answer = p.ask(f"async {seed} 1")
        if answer.startswith("refused"):  # SLOT-3: at its slot bound a sender may publish nothing
            continue
        v = published(answer)
        m = next_receive(b)
        for slot, what, seed_held in ((old, "version 0's", 0), (failed_slot, f"the failed version {v1}'s", 221)):
            assert m["slot"] != slot, (f"ZC-2 violated: version {v} was written into slot {slot}, {what}, which "
                                       f"receiver 0 may still read after its Ack(error)")
            check_bytes(a, slot, seed_held, p.arrays, "ZC-2", f"slot {slot} ({what}) after receiver 0's Ack(error)")
        b.send(ack(1, v))
        assert p.ask(f"wait {v} {tm.T:g}") == f"returned {v}"


@pytest.mark.req("SM-S-2", "SM-S-9", "INIT-2")
def test_a_ready_ok_of_another_major_version_is_a_violation(program, peers):
    """A receiver must refuse an Init of another major (INIT-2); one that answers Ready(ok) in protocol 2.0 instead
    broke the protocol and is cut off alone, named so by connect (SM-S-2)."""
    p = program()
    a, b = (arrive(p, peers, rid) for rid in range(RECEIVERS))
    a.send(ready(0, 0))
    b.send({**ready(1, 0), "protocol": "2.0"})
    answer = p.ask(f"connect {tm.T:g}", tm.T + tm.SLACK + answer_bound())
    version, causes = failed(answer, "SM-S-2")
    assert causes == {1: "violation"}, f"SM-S-2 violated: a Ready(ok) in protocol 2.0 gave {answer!r}"
    assert b.closed_by_peer(tm.REACTION), "SM-S-9 violated: the channel of a receiver that broke the protocol stayed open"


@pytest.mark.req("API-12")
def test_a_sender_only_module_exports_its_class_the_errors_and_capabilities(request):
    """Run for a module that names 'sender' alone (conftest then runs this file only, with test_receiver_wire.py
    left out, so the check of exports is made here too)."""
    check_one_role_exports(request.config, "sender")
