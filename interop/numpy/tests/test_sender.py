"""The NumPy sender (numpy_sender.py) against the NumPy receiver (threads and processes), the
reference receiver program (a process that imports torch), and a scripted raw peer."""
import hashlib
import json
import mmap
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgpack
import numpy as np
import numpy_sender as ns
import pytest

import weightsync_numpy as wn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SENDER, RECEIVER = HERE.parent / "numpy_sender.py", HERE.parent / "weightsync_numpy.py"
REFERENCE_RECEIVER = ROOT / "conformance" / "receivers" / "reference_receiver.py"
LAYOUT = [["w", "float32", [3, 5]], ["b", "bfloat16", [5]], ["mask", "bool", [7]], ["step", "int64", []],
          ["empty", "float32", [0, 3]], ["z", "complex64", [2, 2]]]


def weights(seed: int) -> list:
    return ns.seed_weights(seed, LAYOUT)


def sha(arrays) -> str:
    """SHA-256 of every array's bytes in manifest order (the receiver programs' `applied` line)."""
    h = hashlib.sha256()
    for a in (arrays.values() if isinstance(arrays, dict) else [a for _, a in arrays]):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def make_sender(n: int, **kw) -> ns.Sender:
    return ns.Sender(weights(0), n, bfloat16=["b"], **kw)


def connected(sender: ns.Sender, *receivers: wn.Receiver) -> None:
    threads = [threading.Thread(target=r.connect, args=(10,), daemon=True) for r in receivers]
    for t in threads:
        t.start()
    sender.connect(10)
    for t in threads:
        t.join(10)


def same(receiver: wn.Receiver, arrays) -> bool:
    return all(receiver.weights[name].tobytes() == a.tobytes() for name, a in arrays)   # NaN bits too


class Child:
    """A child process whose stdout lines arrive in a queue, read with a timeout."""

    def __init__(self, *argv, env=None):
        self.p = subprocess.Popen([sys.executable, *map(str, argv)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x.rstrip("\n")) for x in self.p.stdout], daemon=True).start()

    def line(self, timeout: float = 20) -> str:
        return self.lines.get(timeout=timeout)

    def ask(self, command: str, timeout: float = 20) -> str:
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self.line(timeout)


@pytest.fixture
def children():
    started: list[Child] = []

    def start(*argv, env=None) -> Child:
        started.append(Child(*argv, env=env))
        return started[-1]

    yield start
    for c in started:
        if c.p.poll() is None:
            c.p.kill()
        c.p.wait(10)


def numpy_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(HERE.parent)}


class RawPeer:
    """A scripted receiver: joins by URL, then reads and writes frames by hand."""

    def __init__(self, url: str):
        addr, self.id, secret = wn.parse_url(url)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(addr)
        self.fds: list[int] = []
        hello, nonce = self.recv(), os.urandom(32)
        self.send("Join", receiver=self.id, nonce=nonce,
                  proof=wn.join_proof(secret, b"weightsync-join", hello["nonce"], nonce, self.id))
        self.welcome = self.recv()
        if self.welcome["type"] == "Welcome":
            assert self.welcome["proof"] == wn.join_proof(secret, b"weightsync-welcome", hello["nonce"], nonce, self.id)
            self.init = self.recv()

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            data, fds, _, _ = socket.recv_fds(self.sock, n - len(buf), 16)
            assert data, "the sender closed the channel"
            buf, self.fds = buf + data, self.fds + fds
        return buf

    def recv(self) -> dict:
        return msgpack.unpackb(self._read(int.from_bytes(self._read(4), "big")))

    def send(self, kind: str, **fields) -> None:
        payload = wn.encode(kind, **fields)
        self.sock.sendall(len(payload).to_bytes(4, "big") + payload)

    def ready(self) -> None:
        self.send("Ready", receiver=self.id, version=self.init["version"], status="ok", detail="", holds_slot=False,
                  protocol="1.1", capabilities=[])

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.sock.close()


@pytest.mark.timeout(30)
def test_layout_and_bad_input():
    arrays = {"w": np.zeros((3, 5), np.float32), "b": np.zeros(5, np.float32), "step": np.zeros((), np.int64)}
    with ns.Sender(arrays, 1) as s:
        assert [(e["name"], e["offset"], e["nbytes"]) for e in s._manifest] == [("w", 0, 60), ("b", 64, 20),
                                                                               ("step", 128, 8)]
        assert s._nbytes == 192 and s.version == 0                       # LAYOUT-1's example
        with pytest.raises(ns.WeightsMismatchError, match="BAD-1"):
            s.send({"w": arrays["w"], "b": arrays["b"]})
        with pytest.raises(ns.WeightsMismatchError, match="BAD-2"):
            s.send({**arrays, "b": np.zeros(5, np.float64)})
        with pytest.raises(ns.WeightsMismatchError, match="BAD-2"):
            s.send({**arrays, "w": np.zeros((5, 3), np.float32)})
        with pytest.raises(ValueError, match="SEND-6"):
            s.send(workers=[])
        with pytest.raises(ValueError, match="SEND-6"):
            s.send(workers=[1])
        with pytest.raises(wn.LocalProtocolError, match="SEND-4"):
            s.send(timeout=1)
        assert s.version == 0                                             # VER-2: nothing consumed
        with pytest.raises(ValueError):
            s.url(1)
    with pytest.raises(wn.ClosedError):
        s.send()
    for bad in ({"o": np.zeros(2, object)}, {"x" * 5000: np.zeros(2)}, {"\ud800": np.zeros(2)}):
        with pytest.raises(ValueError, match="SEC-7"):
            ns.Sender(bad, 1)
    with pytest.raises(ValueError, match="RDV-1"):
        ns.Sender(arrays, 1, listen="tcp://127.0.0.1:0")


def spec_frame(title: str) -> bytes:
    """A test vector's frame from spec/12-wire.md (WIRE-9)."""
    text = (ROOT / "spec" / "12-wire.md").read_text().split(f"#### {title}\n", 1)[1]
    return bytes.fromhex(text.split("```text\n", 1)[1].split("```", 1)[0])


@pytest.mark.timeout(30)
def test_init_is_the_spec_test_vector():
    with ns.Sender({"w": np.zeros((2, 3), np.float32), "step": np.zeros((), np.int64)}, 3) as s:
        slots = [s._slots[0].info(), s._slots[1].info()]
        init = s._init(2, 7, 1, slots)
        assert len(init).to_bytes(4, "big") + init == spec_frame("Init")     # WIRE-5, WIRE-9


@pytest.mark.timeout(30)
def test_secret_vector_and_listen_address():
    assert ns.receiver_secret(bytes(range(100, 132)), 2).hex() == \
        "e252d90771e47f2664dd31739f1cc9bda0ec200272dd623f446c2f0cf8201318"      # spec 14.4
    name = f"wsnp-{os.getpid()}-a%25b%3Fc"
    with ns.Sender({"x": np.zeros(3)}, 1, listen=f"unix:@{name}") as s:      # RDV-1: % and ? percent-encoded
        assert s.address == f"unix:@{name}" and wn.parse_url(s.url(0))[0] == f"\0wsnp-{os.getpid()}-a%b?c"
        r = wn.Receiver(s.url(0))
        connected(s, r)
        assert r.version == 0
        r.close()


@pytest.mark.timeout(30)
def test_slots_are_sealed_and_read_only():
    with make_sender(1) as s:
        peer = RawPeer(s.url(0))
        assert peer.init["slots"] == [{"slot": 0, "device": "cpu", "nbytes": 320, "ipc": []},
                                      {"slot": 1, "device": "cpu", "nbytes": 320, "ipc": []}]
        assert len(peer.fds) == 2 and peer.init["version"] == 0 and peer.init["slot"] == 0
        fd = peer.fds[0]
        with open(fd, "rb", closefd=False) as f:    # the bytes of version 0 at the manifest's offsets
            raw = f.read()
        for entry, (_, a) in zip(peer.init["manifest"], weights(0)):
            assert raw[entry["offset"]:entry["offset"] + entry["nbytes"]] == a.tobytes()
        with pytest.raises(OSError):
            os.write(fd, b"x")
        rw = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)      # SEC-4: the seals, not the descriptor, protect it
        try:
            for attack in (lambda: os.write(rw, b"x"), lambda: os.ftruncate(rw, 0), lambda: os.ftruncate(rw, 4096),
                           lambda: mmap.mmap(rw, 320, flags=mmap.MAP_SHARED, prot=mmap.PROT_WRITE)):
                with pytest.raises(OSError):
                    attack()
        finally:
            os.close(rw)
        peer.close()


@pytest.mark.timeout(30)
def test_push_and_pull_bit_for_bit_versions_and_subsets():
    with make_sender(2) as s:
        push, pull = wn.Receiver(s.url(0)), wn.Receiver(s.url(1), mode="pull")
        connected(s, push, pull)
        assert same(push, weights(0)) and same(pull, weights(0))
        for seed in (1, 2, 3):
            future = s.send_async(weights(seed), timeout=10)
            assert pull.poll(10) == seed
            assert future.wait(10) == seed == s.version and future.done()
            assert same(push, weights(seed)) and same(pull, weights(seed))
        assert s.send(weights(4), workers=[0], timeout=10) == 4          # CONS-5: receiver 1 is untouched
        assert push.version == 4 and same(push, weights(4))
        assert pull.version == 3 and same(pull, weights(3))
        f5, f6 = s.send_async(weights(5), workers=[1]), s.send_async(weights(6), workers=[1])
        assert pull.poll(10) == 6                                         # ACK-2: one Ack answers 5 and 6
        assert f5.wait(10) == 5 and f6.wait(10) == 6 and same(pull, weights(6))
        with pytest.raises(ns.SyncTimeoutError) as e:                     # a pull receiver that does not poll
            s.send(weights(7), timeout=0.5)
        assert e.value.causes == {1: "timeout"} and e.value.version == 7
        f8 = s.send_async(weights(8))                                     # SEND-5: 7 still pending, then 8
        assert pull.poll(10) == 8 and f8.wait(10) == 8 and same(pull, weights(8))
        push.close(), pull.close()


@pytest.mark.timeout(30)
def test_a_zero_copy_receivers_slot_is_never_written():
    with make_sender(2, max_slots=3) as s:
        copy, zc = wn.Receiver(s.url(0)), wn.Receiver(s.url(1), zero_copy=True)
        connected(s, copy, zc)
        assert s.send(weights(1), timeout=10) == 1 and same(zc, weights(1))
        for seed in range(2, 7):                                          # ZC-2: receiver 1 holds version 1's slot
            assert s.send(weights(seed), workers=[0], timeout=10) == seed and same(copy, weights(seed))
            assert same(zc, weights(1))
        with pytest.raises(ValueError, match="SLOT-1"):
            ns.Sender(weights(0), 1, max_slots=1)
        assert s.send(weights(7), timeout=10) == 7 and same(zc, weights(7)) and same(copy, weights(7))
        copy.close(), zc.close()


@pytest.mark.timeout(30)
def test_violation_stall_and_drop():
    with make_sender(2, max_slots=2) as s:
        good, bad = wn.Receiver(s.url(0)), RawPeer(s.url(1))
        threading.Thread(target=good.connect, args=(10,), daemon=True).start()
        bad.ready()
        s.connect(10)
        f1 = s.send_async(weights(1))
        assert bad.recv()["version"] == 1                                 # and never answered
        assert s.send(weights(2), workers=[0], timeout=10) == 2
        # the stalled receiver pins slot 1, version 2 holds slot 0 (SLOT-2, SLOT-3, SEC-5)
        t0 = time.monotonic()
        with pytest.raises(ns.SyncTimeoutError) as e:
            s.send(weights(3), workers=[0], timeout=0.5)
        assert e.value.version is None and e.value.causes == {1: "timeout"} and s.version == 2
        assert 0.45 < time.monotonic() - t0 < 3
        s.drop(1)                                                         # API-9: its slot is free again
        assert bad.recv() == {"type": "Stop"}
        with pytest.raises(ns.ReceiverDiedError, match="API-9") as e:
            f1.wait(0)
        assert e.value.causes == {1: "died"}
        assert s.send(weights(3), workers=[0], timeout=10) == 3 and same(good, weights(3))
        with pytest.raises(ns.ReceiverDiedError):                         # SEND-4: gone, nothing published
            s.send(weights(4), timeout=10)
        assert s.version == 3
        # the same URL joins again, acks a version that is not pending: cut off alone (ACK-5, SM-S-9)
        bad.close()
        bad = RawPeer(s.url(1))
        assert bad.init["version"] == 3                                   # LIFE-1: the latest version
        bad.ready()
        s.connect(10, workers=[1])
        future = s.send_async(weights(4))
        assert bad.recv()["version"] == 4
        bad.send("Ack", receiver=1, version=3, status="ok", detail="")
        with pytest.raises(ns.ReceiverError) as e:
            future.wait(10)
        assert e.value.causes == {1: "violation"} and "ACK-5" in e.value.details[1] and good.version == 4
        assert s.send(weights(5), workers=[0], timeout=10) == 5
        bad.close(), good.close()


@pytest.mark.timeout(30)
def test_join_refusals():
    with make_sender(2) as s:
        forged = s.url(1).replace("receiver=1", "receiver=0")             # RDV-2: 1's secret is not 0's
        peer = RawPeer(forged)
        assert peer.welcome == {"type": "Refuse", "detail": "refused: unknown receiver id or wrong secret"}
        peer.close()
        live = RawPeer(s.url(0))
        live.ready()
        s.connect(10, workers=[0])
        again = RawPeer(s.url(0))                                         # RDV-5: one connection per id
        assert again.welcome == {"type": "Refuse", "detail": "receiver 0 is live"}
        again.close(), live.close()


@pytest.mark.timeout(30)
def test_connect_names_a_handshake_that_failed_before_it_ran():
    with make_sender(3) as s:
        refusing, vanishing = RawPeer(s.url(1)), RawPeer(s.url(2))   # RDV-5: Init goes out with no connect()
        refusing.send("Ready", receiver=1, version=None, status="error", detail="no such target", holds_slot=False,
                      protocol="1.1", capabilities=[])
        vanishing.close()
        good = wn.Receiver(s.url(0))
        threading.Thread(target=good.connect, args=(10,), daemon=True).start()
        with pytest.raises(ns.ReceiverError) as e:
            s.connect(10)
        assert e.value.causes == {1: "error", 2: "died"} and isinstance(e.value, ns.ReceiverDiedError)
        assert "no such target" in e.value.details[1]
        s.connect(10)                                                     # named once; 0 is live
        assert good.version == 0
        with pytest.raises(ns.SyncTimeoutError) as e:                     # a named failed one: a new join
            s.connect(0.2, workers=[1])
        assert e.value.causes == {1: "timeout"}
        refusing.close(), good.close()


@pytest.mark.timeout(30)
def test_death_is_seen_at_once_and_the_url_rejoins(children):
    with make_sender(2) as s:
        r = [children(RECEIVER, s.url(i), env=numpy_env()) for i in range(2)]
        s.connect(20)
        assert [c.line() for c in r] == [f"applied 0 {sha(weights(0))}"] * 2
        assert s.send(weights(1), timeout=10) == 1
        assert [c.line() for c in r] == [f"applied 1 {sha(weights(1))}"] * 2
        r[1].p.kill()
        t0 = time.monotonic()
        with pytest.raises(ns.ReceiverDiedError) as e:                    # SEND-3: no timeout needed
            s.send(weights(2), timeout=20)
        assert time.monotonic() - t0 < 5 and e.value.causes == {1: "died"}
        if e.value.version == 2:   # it died while the send waited, not before it (SEND-4)
            assert r[0].line() == f"applied 2 {sha(weights(2))}"
        v = s.send(weights(3), workers=[0], timeout=10)                   # SEC-5: receiver 0 goes on
        assert r[0].line() == f"applied {v} {sha(weights(3))}"
        r[1] = children(RECEIVER, s.url(1), env=numpy_env())             # LIFE-2/RDV-5: same URL, new process
        s.connect(20, workers=[1])
        assert r[1].line() == f"applied {v} {sha(weights(3))}"            # LIFE-1: the latest version
        assert s.send(weights(4), timeout=10) == v + 1
    assert [c.line() for c in r] == [f"applied {v + 1} {sha(weights(4))}"] * 2
    assert [c.line() for c in r] == ["stopped"] * 2                       # LIFE-4: close sent Stop


@pytest.mark.timeout(60)
def test_reference_receivers_push_and_pull(children):
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'reference'}{os.pathsep}{ROOT}"}
    with make_sender(2) as s:
        r = [children(REFERENCE_RECEIVER, s.url(0), "push", env=env),
             children(REFERENCE_RECEIVER, s.url(1), "pull", env=env)]
        s.connect(45)
        assert [c.line(30) for c in r] == [f"applied 0 {sha(weights(0))}"] * 2
        for seed in (1, 2, 3):
            assert s.send(weights(seed), timeout=20) == seed
            assert [c.line() for c in r] == [f"applied {seed} {sha(weights(seed))}"] * 2
    assert [c.line() for c in r] == ["stopped"] * 2


@pytest.mark.timeout(30)
def test_command_line_contract(children, tmp_path):
    layout = tmp_path / "layout.json"
    layout.write_text(json.dumps(LAYOUT))
    prog = children(SENDER, layout, 2, env=numpy_env())
    urls = [prog.line().split(" ") for _ in range(2)]
    assert [u[:2] for u in urls] == [["url", "0"], ["url", "1"]] and prog.line() == "listening"
    r = [children(RECEIVER, u[2], env=numpy_env()) for u in urls]
    assert prog.ask("connect 20") == "connected"
    assert [c.line() for c in r] == [f"applied 0 {sha(weights(0))}"] * 2
    assert prog.ask("send 1 10") == "returned 1"
    assert prog.ask("async 2 1") == "published 2" and prog.ask("wait 2 10") == "returned 2"
    assert [c.line() for c in r] == [f"applied 1 {sha(weights(1))}", f"applied 1 {sha(weights(1))}"]
    assert r[1].line() == f"applied 2 {sha(weights(2))}"
    assert prog.ask("send 3 10 7").startswith("refused") and prog.ask("send 3 10 0") == "returned 3"
    assert r[0].line() == f"applied 3 {sha(weights(3))}"
    assert prog.ask("drop 1") == "dropped 1" and r[1].line() == "stopped"
    assert prog.ask("send 4 10").startswith("refused")                    # SEND-4: 1 is gone
    r[0].p.kill()
    r[0].p.wait(10)
    answer = prog.ask("send 4 10 0")                                      # died before (SEND-4) or during
    assert answer == "failed 4 0=died" or answer.startswith("refused"), answer
    assert prog.ask("close") == "closed" and prog.p.wait(10) == 0
