"""The network profile between independent processes, as separate hosts would run it (spec 15).

Receivers are started with subprocess (not multiprocessing) and given only
`sender.url(i)`; everything crosses 127.0.0.1 over TCP and gloo. Each worker
prints the digest of every version it holds (tests/net_worker.py), so bytes are
checked against what the trainer published.
"""

from __future__ import annotations

import hashlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

import weightsync as ws

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]
WORKER = str(Path(__file__).with_name("net_worker.py"))
LEASE = 5.0
GRACE = 3.0


def model(seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"a.weight": torch.randn(64, 32, generator=g), "a.bias": torch.randn(64, generator=g),
            "half": torch.randn(7, 3, generator=g).to(torch.bfloat16), "steps": torch.tensor(seed),
            "mask": torch.rand(5, generator=g) > 0.5}


def digest(weights: dict) -> str:
    h = hashlib.sha256()
    for t in weights.values():
        if t.numel():
            h.update(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


class Worker:
    """A receiver process and the lines it prints, read by a thread so no read blocks the test."""

    def __init__(self, url: str, mode: str = "push", rejoin: bool = False):
        args = [sys.executable, WORKER, url, mode] + (["--rejoin"] if rejoin else [])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent.parent / "reference"),
                                                                        os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.applied: dict[int, str] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.split())

    def until(self, pred, bound: float = 60.0):
        """Reads lines until pred(line) is true; the line, or AssertionError after `bound`."""
        end = time.monotonic() + bound
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"worker {self.proc.pid}: no such line within {bound} s") from None
            if line[:1] == ["applied"]:
                self.applied[int(line[1])] = line[2]
            if pred(line):
                return line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


@pytest.fixture
def workers():
    made = []
    yield made
    for w in made:
        w.stop()


def test_three_hosts_get_every_version_bit_for_bit_and_subsets(workers):
    published = {0: digest(model(0))}
    with ws.Sender(model(0), 3, listen="tcp://127.0.0.1:0") as sender:
        assert sender.address.startswith("tcp://127.0.0.1:") and not sender.address.endswith(":0")
        workers += [Worker(sender.url(i), mode) for i, mode in enumerate(["push", "pull", "push"])]
        sender.connect(timeout=120)
        for v in range(1, 21):
            targets = [0, 2] if v % 5 == 0 else None
            assert sender.send(model(v), workers=targets, timeout=60) == v
            published[v] = digest(model(v))
    for w in workers:
        w.until(lambda line: line == ["stopped"])
        assert w.applied, "a worker held no version"
        for v, d in w.applied.items():
            assert published[v] == d, f"version {v} arrived with other bytes"
    assert max(workers[0].applied) == 20 and max(workers[1].applied) == 19  # 20 went to 0 and 2 only
    assert 5 not in workers[1].applied and 10 not in workers[1].applied


def test_a_killed_host_is_named_at_once_and_a_frozen_one_by_the_lease(workers):
    big = {"w": torch.randn(4_000_000)}  # 16 MB: a transfer under way when the kill lands
    with ws.Sender(big, 3, listen="tcp://127.0.0.1:0") as sender:
        workers += [Worker(sender.url(i), "push", rejoin=True) for i in range(3)]
        sender.connect(timeout=120)
        f = sender.send_async(timeout=60)
        os.kill(workers[0].proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        with pytest.raises(ws.ReceiverDiedError) as died:
            f.wait(timeout=60)
        assert 0 in died.value.workers and time.monotonic() - t0 < GRACE, "SEND-3: a killed worker is seen at once"
        os.kill(workers[1].proc.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        try:
            with pytest.raises(ws.ReceiverDiedError) as frozen:
                sender.send(workers=[1, 2], timeout=None)
            assert frozen.value.workers == [1]
            assert time.monotonic() - t0 <= LEASE + GRACE, f"named after {time.monotonic() - t0:.1f} s"
            for _ in range(3):  # the others keep receiving
                v = sender.send(workers=[2], timeout=60)
            assert v == sender.version
        finally:
            os.kill(workers[1].proc.pid, signal.SIGCONT)
        sender.connect(timeout=120, workers=[1])  # thawed: its channel was cut, it joins again by URL
        workers.append(Worker(sender.url(0), "push"))  # a new process for the killed one
        sender.connect(timeout=120, workers=[0])
        v = sender.send(timeout=60)
    for w in workers[1:]:
        w.until(lambda line: line[:2] == ["applied", str(v)])


@pytest.mark.parametrize("mode", ["pull", "push"])
def test_thawed_hosts_stop_and_exit_cleanly(workers, mode):
    """Workers frozen past their lease (a split network) while a transfer to them is under way, then
    resumed, find their lease expired and stop; their processes then exit normally: nothing of
    their data plane outlives the receiver (a pending gloo receive once made some of them die with
    SIGABRT at exit). Two are frozen at once, the third is served meanwhile."""
    weights = {"w": torch.randn(200_000), "b": torch.randn(1000)}
    with ws.Sender(weights, 3, listen="tcp://127.0.0.1:0") as sender:
        workers += [Worker(sender.url(i), mode) for i in range(3)]
        sender.connect(timeout=120)
        sender.send(timeout=60)
        for w in workers[:2]:
            os.kill(w.proc.pid, signal.SIGSTOP)
        try:
            f = sender.send_async(timeout=60)  # its transfers to the frozen workers stay under way
            while not f.done():  # the third worker is served meanwhile
                sender.send(workers=[2], timeout=60)
                time.sleep(0.3)
            with pytest.raises(ws.ReceiverDiedError) as frozen:
                f.wait(timeout=0)
            # Their leases run out up to a heartbeat apart: the error names those known by then (SEND-7).
            assert frozen.value.workers and set(frozen.value.workers) <= {0, 1}, frozen.value.workers
        finally:
            for w in workers[:2]:
                os.kill(w.proc.pid, signal.SIGCONT)
        for w in workers[:2]:
            w.until(lambda line: line == ["stopped"], bound=30)
            try:
                code = w.proc.wait(30)
            except subprocess.TimeoutExpired:
                raise AssertionError("a thawed worker did not exit within 30 s of stopping") from None
            assert code == 0, f"a thawed worker exited with {code} (a negative code is the signal that ended it)"


def test_a_wrong_secret_is_refused(workers):
    with ws.Sender(model(0), 1, listen="tcp://127.0.0.1:0") as sender:
        url = sender.url(0)
        wrong = url[: url.index("secret=") + 7] + "0" * 64
        w = Worker(wrong)
        workers.append(w)
        line = w.until(lambda line: line[:1] == ["error"])
        assert line[1] == "RefusedError:" and not w.applied


def test_this_torch_still_writes_the_key_a_lane_waits_for():
    """netplane.RANK_KEY is a private name of torch's gloo rendezvous: a two-rank group built here must write it."""
    import datetime
    import secrets

    import torch.distributed as dist

    from weightsync import netplane

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=30))
    prefix, groups = secrets.token_hex(8), {}

    def build(rank: int) -> None:
        groups[rank] = netplane._group(netplane._client("127.0.0.1", store.port, 30), prefix, rank, "127.0.0.1", 30)

    receiver = threading.Thread(target=build, args=(1,))
    receiver.start()
    keys = dist.PrefixStore(prefix, store)
    deadline = time.monotonic() + 30
    while not keys.check([netplane.RANK_KEY]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert keys.check([netplane.RANK_KEY]), f"torch's gloo no longer writes {netplane.RANK_KEY!r} for rank 1"
    build(0)  # the sender's side, now that the receiver's began
    receiver.join(30)
    assert set(groups) == {0, 1}


ABANDON = """
import datetime, sys, time, torch, torch.distributed as dist
sys.path.insert(0, {root!r})
import weightsync as ws
from conformance.peers import Joiner
s = ws.Sender({{"w": torch.zeros(16)}}, 1, listen="tcp://127.0.0.1:0")
j = Joiner(s.url(0))
assert j.join().get("type") == "Welcome"
plane = j.recv(10)[0]["data_plane"]
host, _, port = plane["store"].rpartition(":")
store = dist.TCPStore(host, int(port), is_master=False, wait_for_workers=False, timeout=datetime.timedelta(seconds=5))
dist.PrefixStore(plane["prefix"], store).set("joined", "1")  # says it builds its side, and never does
del store
j.sock.close()
time.sleep({pause})
{close}
print("exiting", flush=True)
"""


@pytest.mark.processes
@pytest.mark.parametrize("close", [True, False], ids=["closed", "not-closed"])
def test_a_join_abandoned_after_its_joined_key_lets_the_trainer_exit_cleanly(close):
    """NET-5, LIFE-9: a joiner that sets its `joined` key and leaves never puts the trainer inside gloo's group
    constructor, which aborts the process (SIGABRT) when the store goes away at close() or at exit."""
    root = str(Path(__file__).resolve().parent.parent)
    for pause in (0.5, 1.5, 3.0):
        script = ABANDON.format(root=root, pause=pause, close="s.close()" if close else "")
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": f"{root}/reference:{root}"})
        assert out.returncode == 0 and "exiting" in out.stdout, (pause, out.returncode, out.stderr[-1500:])


def _refused(port: int, within: float) -> bool:
    """Whether 127.0.0.1:port stops accepting connections within `within` seconds."""
    import socket

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
        except ConnectionRefusedError:
            return True
        time.sleep(0.02)
    return False


def test_a_lane_ends_its_store_after_the_first_transfer():
    """NET-6: the store serves one incarnation's join and ends once its first transfer is through."""
    from weightsync import netplane

    store = netplane.Store("127.0.0.1", 30, 5)
    plane = store.data_plane("127.0.0.1", 64)
    failures: list[str] = []
    lane = netplane.Lane(store, plane, "127.0.0.1", failures.append)
    lane.submit(0, torch.arange(64, dtype=torch.uint8))
    inbound = netplane.Inbound(plane, "127.0.0.1", 30)
    try:
        b = inbound.receive_now(set())
        assert torch.equal(inbound.buffers[b], torch.arange(64, dtype=torch.uint8))
        assert _refused(store.port, 5), "the store still accepts connections after the first transfer (NET-6)"
        lane.submit(1, torch.full((64,), 7, dtype=torch.uint8))  # the group outlives its store
        b = inbound.receive_now({b})
        assert torch.equal(inbound.buffers[b], torch.full((64,), 7, dtype=torch.uint8)) and not failures
    finally:
        inbound.close()
        lane.close(abort=True)


def _lane_and_a_client():
    """A store and its lane, as a sender makes them for one receiver, and a client of that store, as the
    receiver's: (store, plane, failures the lane reported, lane, client)."""
    import datetime

    import torch.distributed as dist

    from weightsync import netplane

    store = netplane.Store("127.0.0.1", 30, 5)
    plane = store.data_plane("127.0.0.1", 64)
    failures: list[str] = []
    lane = netplane.Lane(store, plane, "127.0.0.1", failures.append)
    client = dist.TCPStore("127.0.0.1", store.port, is_master=False, wait_for_workers=False,
                           timeout=datetime.timedelta(seconds=5))
    return store, plane, failures, lane, client


def test_keys_written_once_a_receiver_joined_never_make_it_gone():
    """NET-6: the sender MAY count a receiver's keys only while it waits for `joined`. One that wrote 64 keys of its
    own (`joined` included) then builds its group, whose construction adds keys of gloo's: it is served. The lane
    counted until the group's own key came too, and under load (its poll falling between gloo's keys) named such a
    receiver gone and ended its store under its construction."""
    import torch.distributed as dist

    from weightsync import limits, netplane

    store, plane, failures, lane, client = _lane_and_a_client()
    keys = dist.PrefixStore(plane.prefix, client)
    for k in range(limits.MAX_STORE_KEYS - 1):
        keys.set(f"mine{k}", "x")
    keys.set(netplane.JOINED, "1")  # 64 keys of its own
    for k in range(3):  # what a construction may write before the key the lane waits for next
        keys.set(f"gloo{k}", "x")
    time.sleep(3 * netplane.JOIN_POLL)  # not a synchronisation: the lane has looked at the store meanwhile
    assert not failures, failures
    lane.submit(0, torch.arange(64, dtype=torch.uint8))
    inbound = netplane.Inbound(plane, "127.0.0.1", 30)
    try:
        b = inbound.receive_now(set())
        assert torch.equal(inbound.buffers[b], torch.arange(64, dtype=torch.uint8)) and not failures
    finally:
        inbound.close()
        lane.close(abort=True)


def test_a_lane_whose_receiver_floods_its_store_names_it_gone_and_ends_the_store():
    """NET-6: more than 64 keys before `joined` make the receiver gone; its store ends with the lane."""
    from weightsync import limits

    store, plane, failures, lane, client = _lane_and_a_client()
    for k in range(limits.MAX_STORE_KEYS + 1):
        client.set(f"junk{k}", "x" * 100)
    lane.thread.join(5)
    assert not lane.thread.is_alive() and len(failures) == 1 and "NET-6" in failures[0], failures
    assert _refused(store.port, 5), "the flooded store still accepts connections after its lane ended (NET-6)"


def test_a_join_whose_store_is_slow_to_start_stalls_no_other_receiver(monkeypatch):
    """NET-4, SEC-5: torch's TCPStore can take seconds to start (it looks the address up by reverse DNS, which took
    5 s in one start of 30 on the CI's kind of machine). Made on the thread that keeps the sender's leases and
    heartbeats, that stalled every other receiver: a connected one heard nothing for its lease and stopped, and the
    joining one was "never connected (lease expired)" once its Init finally went out. The store is made off that
    thread, and the joining receiver's lease counts from its Init."""
    from weightsync import netplane

    store_init = netplane.Store.__init__
    started = threading.Event()

    def slow_store(self, *args, **kwargs):
        if started.is_set():  # the second receiver's store: two leases late; not a synchronisation
            time.sleep(2.0)
        started.set()
        store_init(self, *args, **kwargs)

    monkeypatch.setattr(netplane.Store, "__init__", slow_store)
    sender = ws.Sender({"w": torch.arange(8.0)}, 2, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2)
    rxs = [ws.Receiver(sender.url(i)) for i in range(2)]
    got: dict = {}

    def connect(i):
        try:
            got[i] = rxs[i].connect(30)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            got[i] = e

    threads = [threading.Thread(target=connect, args=(i,)) for i in range(2)]
    try:
        threads[0].start()
        sender.connect(30, workers=[0])
        threads[1].start()
        sender.connect(30, workers=[1])
        for t in threads:
            t.join(30)
        assert got == {0: 0, 1: 0}, got
        assert sender.send(timeout=10) == 1  # both still there: receiver 0 was not cut off meanwhile
        assert [rx.version for rx in rxs] == [1, 1]
    finally:
        for rx in rxs:
            rx.close()
        sender.close()
        for t in threads:
            t.join(10)


def test_a_store_that_cannot_be_made_ends_that_join_only(monkeypatch):
    """NET-6: a receiver whose store the sender could not make is not left waiting for an Init: its channel ends
    at once (its connect() fails), and a new process joins with the same URL and is served."""
    from weightsync import netplane

    store_init, calls = netplane.Store.__init__, []

    def first_fails(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("no store this time")
        store_init(self, *args, **kwargs)

    monkeypatch.setattr(netplane.Store, "__init__", first_fails)
    sender = ws.Sender({"w": torch.arange(4.0)}, 1, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2)
    first = ws.Receiver(sender.url(0))
    try:
        t0 = time.monotonic()
        with pytest.raises(ws.WeightSyncError):
            first.connect(10)
        assert time.monotonic() - t0 < 5, "the join whose store failed waited out its bound"
        first.close()
        second = ws.Receiver(sender.url(0))
        got: dict = {}
        t = threading.Thread(target=lambda: got.update(version=second.connect(10)))
        t.start()
        sender.connect(10)
        t.join(10)
        assert got == {"version": 0}
        assert sender.send(timeout=10) == 1 and second.version == 1
        second.close()
    finally:
        first.close()
        sender.close()


def test_a_handshake_that_outlasts_the_lease_keeps_the_receiver(monkeypatch):
    """NET-4: a receiver speaks from its join on. Building its data plane, the first transfer and its apply can take
    longer than the lease (a large model across hosts): it sends Heartbeats meanwhile, so the sender's connect()
    does not name it gone ("never connected ... lease expired", as it did before) and the next send reaches it."""
    from weightsync import netplane

    receive_now = netplane.Inbound.receive_now

    def slow_first_transfer(self, busy):
        time.sleep(2.5)  # stands for a first transfer two and a half leases long; not a synchronisation
        return receive_now(self, busy)

    monkeypatch.setattr(netplane.Inbound, "receive_now", slow_first_transfer)
    sender = ws.Sender({"w": torch.arange(8.0)}, 1, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2)
    rx = ws.Receiver(sender.url(0))
    got: dict = {}

    def connect():
        try:
            got["version"] = rx.connect(30)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            got["error"] = e

    t = threading.Thread(target=connect)
    t.start()
    try:
        sender.connect(30)
        t.join(30)
        assert got == {"version": 0}, got
        assert sender.send(timeout=10) == 1
        assert rx.version == 1  # acked, so applied (SEND-1)
    finally:
        rx.close()
        sender.close()
        t.join(10)


def test_the_lease_counts_from_the_init_not_the_join(monkeypatch):
    """NET-4: the sender counts a receiver's lease from the Init it sent, where the receiver learns the lease. A
    store that takes three leases to make (a slow resolver on the trainer's host) delays the Init past the lease
    after the join; the receiver, silent until its Init as it must be, still joins and takes the next version. The
    suite cannot lengthen the time between a join and the Init of the sender under test (clause NET-4.j): this is
    the reference's own check (an outside round's bug counted the lease from the join)."""
    from weightsync import netplane

    made = netplane.Store.__init__

    def slow(self, *args, **kwargs):
        time.sleep(1.5)
        made(self, *args, **kwargs)

    monkeypatch.setattr(netplane.Store, "__init__", slow)
    sender = ws.Sender({"w": torch.zeros(3)}, 1, listen="tcp://127.0.0.1:0", lease=0.5, heartbeat=0.1)
    receiver = ws.Receiver(sender.url(0))
    try:
        joined = threading.Thread(target=receiver.connect, args=(20,), daemon=True)
        joined.start()
        sender.connect(20)
        joined.join(20)
        assert sender.send({"w": torch.ones(3)}, timeout=10) == 1 and receiver.version == 1
    finally:
        receiver.close()
        sender.close()
