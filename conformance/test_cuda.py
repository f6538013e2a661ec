"""Spec section 11, CUDA buffers (CUDA-*), for implementations that declare `cuda`.

These tests also need a CUDA device on the machine that runs the suite; without
one they are skipped with that reason.
"""

import contextlib
import gc
import importlib
import os
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest
import torch
import torch.multiprocessing as mp

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .model import describe
from .rig import Background, Rig, expect_error, waited
from .verdict import checked_nothing, in_time

pytestmark = [pytest.mark.needs("cuda", "push")]


@pytest.fixture(autouse=True)
def _device():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")


def basic(seed=0, device="cpu"):
    return {n: t.to(device) for n, t in S.distinct_weights(S.BASIC_SPEC, seed).items()}


def _settled() -> int:
    """Bytes torch's allocator holds for live tensors in this process, once queued work and freed shares settled."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.ipc_collect()
    return torch.cuda.memory_allocated()


@pytest.mark.req("CUDA-1", "ACK-3")
@pytest.mark.parametrize("source", ["cpu", "cuda:0"])
def test_each_receiver_reads_from_its_slot_device(rigs, source):
    rig = rigs(basic(0, source), 2, devices=["cuda:0", "cpu"], targets=None)
    for i, want in enumerate(["cuda", "cpu"]):
        devs = set(rig.workers[i].call("devices").values())
        assert {d.split(":")[0] for d in devs} == {want}, f"CUDA-1 violated: receiver {i} reads from {devs}, not {want}"
    for k in range(1, 4):
        rig.send(basic(k, source))
        rig.check()


@pytest.mark.req("CUDA-2", "CUDA-3", "CONS-1")
def test_no_incomplete_version_is_seen_on_the_device(rigs):
    spec = [("big", torch.float32, (1024, 1024)), ("n", torch.int64, ())]
    rig = rigs({n: t.cuda() for n, t in S.distinct_weights(spec, 0).items()}, 2, devices=["cuda:0"] * 2, targets=None)
    for w in rig.workers:
        w.call("reader_start")
    for k in range(1, 16):
        rig.send({n: t.cuda() for n, t in S.distinct_weights(spec, k).items()})
    for i, w in enumerate(rig.workers):
        obs = w.call("reader_stop")
        assert not obs["errors"], f"CUDA-2 violated: receiver {i}'s reader saw {obs['errors'][:2]}"
        for (v, d), _ in obs["observed"]:
            assert d == rig.model.digests[v], f"CUDA-2 violated: receiver {i} saw version {v} with incomplete bytes"
    rig.check()


@pytest.mark.req("CUDA-4", "SEND-3")
def test_dead_receiver_and_close_release_device_memory(ws, pool, capfd):
    before = _settled()
    rig = Rig(ws, pool, basic(0, "cuda:0"), 2, devices=["cuda:0"] * 2, targets=None)
    rig.send(basic(1, "cuda:0"))
    rig.workers[1].kill()
    expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(2, "cuda:0"), timeout=tm.T, ids="CUDA-4",
                 what="send after a CUDA receiver was killed", naming=[1], limit=tm.T)
    rig.sender.close()
    rig.workers[0].call("discard")
    del rig
    after = _settled()
    # The killed receiver never returns its share counts, so every slot it mapped (the whole pool: both receivers
    # read one group) stays reserved until this process exits (CUDA-4); anything beyond the pool is a leak.
    weights = basic(0)
    pool_bytes = 4 * (sum(t.numel() * t.element_size() + 64 for t in weights.values()) + 512)  # max_slots = n + 2
    assert after - before <= pool_bytes, (
        f"CUDA-4 violated: {after - before} bytes of device memory left after close(), more than the {pool_bytes} "
        "bytes of slots a killed receiver may keep reserved")
    out, err = capfd.readouterr()
    assert "IPC" not in out + err, f"CUDA-4 violated: CUDA IPC warnings at shutdown: {(out + err)[:300]}"


def in_process(ws, sender, **options):
    """A receiver of `sender` in this process, connected from a thread (CUDA-5).

    The receiver is made before sender.connect(): in one process the handle is the
    sender's own copy of the receiver's end, which connect() closes.
    """
    r = ws.Receiver(sender.handle(0), **options)
    box = {}

    def run():
        try:
            box["version"] = r.connect(tm.T)
        except Exception as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        sender.connect(tm.T)
    finally:  # the receiver's own error says more than the sender's view of it
        t.join(tm.T)
        if "error" in box:
            e = box["error"]
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-2500:]
            raise AssertionError(f"CUDA-5 violated: a receiver in the sender's process failed: {e!r}\n{tb}")
    return r


#: GPU time a reader's kernel keeps its stream busy (about 0.15 s on an H100): far longer than an apply.
SLEEP_CYCLES = 300_000_000


@pytest.mark.req("CUDA-6", "CUDA-3")
@pytest.mark.parametrize("zero_copy", [False, pytest.param(True, marks=pytest.mark.needs("zero_copy"))],
                         ids=["copy", "zero-copy"])
def test_no_apply_overtakes_gpu_work_queued_inside_reading(ws, zero_copy):
    """A kernel queued inside reading() still reads version 0 when the block ends; what it reads
    must still be version 0 however many versions follow (the weights come from the CPU, so
    that the sender's own stream ordering cannot hide the receiver's)."""
    n = 1 << 20
    with ws.Sender({"w": torch.zeros(n)}, 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s, zero_copy=zero_copy)
        try:
            with r.reading():
                torch.cuda._sleep(SLEEP_CYCLES)
                snapshot = r.weights["w"].clone()  # queued behind the sleep
            for v in range(1, 4):  # zero-copy: version 0's slot is released and rewritten by one of these
                s.send({"w": torch.full((n,), float(v))}, timeout=tm.T)
            torch.cuda.synchronize()
            changed = int((snapshot != 0).sum())
            rule = "CUDA-3" if zero_copy else "CUDA-6"
            assert changed == 0, (f"{rule} violated: a kernel queued inside reading() read {changed} elements of a "
                                  "later version: the apply (or the sender's rewrite of a released slot) overtook it")
        finally:
            r.close()


def _started_seeing(ctx, visible: str, target, args: tuple):
    """A daemon process running `target(*args)` that sees only the GPUs `visible` names (CUDA_VISIBLE_DEVICES is
    read by the spawned interpreter as it starts; this process's own value is put back at once)."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = visible
    try:
        p = ctx.Process(target=target, args=args, daemon=True)
        p.start()
    finally:
        if before is None:
            del os.environ["CUDA_VISIBLE_DEVICES"]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before
    return p


def _receive_in_child(impl: str, handle, q) -> None:
    """A spawned receiver that reports the version it holds, a digest of its weights and their devices."""
    try:
        ws = importlib.import_module(impl)
        with ws.Receiver(handle) as r:
            r.connect(tm.T)
            deadline = time.monotonic() + tm.T
            while r.version != 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            with r.reading():
                q.put((r.version, describe(r.weights), sorted({str(t.device) for t in r.weights.values()})))
    except Exception as e:  # noqa: BLE001 - the test reports it
        q.put(f"{type(e).__name__}: {e}")


@pytest.mark.req("CUDA-7", "CUDA-1")
def test_a_receiver_finds_the_slot_device_by_uuid(ws):
    """The receiver sees the sender's GPU (the last one) as its only device, named by UUID: it is
    cuda:0 there. With one GPU the indices agree anyway; with two or more, a receiver that
    maps by the sender's index fails or reads another GPU."""
    last = torch.cuda.device_count() - 1
    device = f"cuda:{last}"
    ctx = mp.get_context("spawn")
    with ws.Sender(basic(0, device), 1, devices=[device]) as s:
        q = ctx.Queue()
        uuid = torch.cuda.get_device_properties(last).uuid
        p = _started_seeing(ctx, f"GPU-{uuid}", _receive_in_child, (ws.__name__, s.handle(0), q))
        try:
            s.connect(tm.T)
            s.send(basic(1, device), timeout=tm.T)
            got = q.get(timeout=tm.T)
        finally:
            s.close()
            p.join(tm.T)
            if p.is_alive():
                p.kill()
    assert not isinstance(got, str), f"CUDA-7 violated: a receiver that sees the GPU by UUID failed: {got}"
    version, digest, devices = got
    assert devices == ["cuda:0"], f"CUDA-7 violated: the receiver's weights are on {devices}, not its cuda:0"
    assert version == 1 and digest == describe(basic(1)), "CUDA-7 violated: the receiver does not hold version 1"


@pytest.mark.req("CUDA-5")
def test_receiver_in_the_senders_process(ws):
    with ws.Sender(basic(0, "cuda:0"), 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s)
        s.send(basic(1, "cuda:0"), timeout=tm.T)
        with r.reading():
            got = describe(r.weights)
        assert got == describe(basic(1)), "CUDA-5 violated: an in-process receiver does not hold the version sent"
        r.close()


# ---- the clauses of section 11 each under its own condition (issue 41) ----


def _connect_one(ws, sender, before=None, **options):
    """A receiver of `sender` (receiver 0) made in this process; both sides connect, the receiver in a thread that
    first runs `before` (GPU work the caller queues before its connect). Returns the receiver and each side's
    outcome, ("ok", value) or ("err", exception); a side that does not end within the bound is TooSlow (INIT-5)."""
    r = ws.Receiver(sender.handle(0), **options)
    box: dict = {}

    def run():
        try:
            if before is not None:
                before()
            box["rx"] = ("ok", r.connect(tm.T))
        except Exception as e:  # noqa: BLE001 - the test judges it
            box["rx"] = ("err", e)

    t = threading.Thread(target=run, name="conformance-receiver-connect", daemon=True)
    t.start()
    try:
        tx = ("ok", bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect"))
    except HarnessError as e:
        tx = ("hang", str(e))
    except ws.WeightSyncError as e:
        tx = ("err", e)
    t.join(tm.T + tm.SLACK)
    in_time(tx[0] != "hang" and "rx" in box, f"INIT-5 violated: the handshake of a receiver in this process did not "
                                             f"end within {tm.T + tm.SLACK:.0f} s ({tx!r}, {box.get('rx')!r})")
    return r, tx, box["rx"]


@pytest.mark.req("CUDA-1")
def test_a_function_of_the_receiver_id_chooses_each_slot_device(rigs):
    """devices= as a callable i -> device: receiver 0 reads from the GPU, receiver 1 from the CPU, and both hold
    each version (CUDA-1's second form of the choice)."""
    rig = rigs(basic(0, "cuda:0"), 2, devices=lambda i: "cuda:0" if i == 0 else "cpu", targets=None)
    for i, want in enumerate(["cuda", "cpu"]):
        devs = set(rig.workers[i].call("devices").values())
        assert {d.split(":")[0] for d in devs} == {want}, (
            f"CUDA-1 violated: with devices as a function of the receiver id, receiver {i} reads from {devs}, "
            f"not {want}")
    for k in (1, 2):
        rig.send(basic(k, "cuda:0"))
        rig.check()


@pytest.mark.req("CUDA-1")
def test_without_devices_each_slot_lives_on_the_device_of_the_weights(rigs):
    """A sender of weights on the GPU made without devices= puts its receiver's slots there (CUDA-1's default)."""
    rig = rigs(basic(0, "cuda:0"), 1, targets=None)
    devs = set(rig.workers[0].call("devices").values())
    assert {d.split(":")[0] for d in devs} == {"cuda"}, (
        f"CUDA-1 violated: without devices=, a receiver of weights on cuda:0 reads from {devs}")
    rig.send(basic(1, "cuda:0"))
    rig.check()


#: The bytes of the weights of the copy-count test: large beside anything else the sender allocates.
COUNTED = 64 << 20


def _grown(rigs, n: int) -> int:
    """What the sender's process allocates on the GPU for `n` receivers of one slot device over three sends."""
    weights = {"w": torch.zeros(COUNTED // 4, device="cuda:0")}
    before = _settled()
    rig = rigs(weights, n, devices=["cuda:0"] * n, targets=None)
    for k in range(1, 4):
        weights["w"].fill_(float(k))
        rig.send(weights)
    rig.check()
    grown = _settled() - before
    rig.teardown()
    for w in rig.workers:  # their receivers release the slots they map: the next rig's count starts clean
        w.call("discard")
    _settled()
    return grown


@pytest.mark.req("CUDA-1", "SLOT-1")
def test_a_version_is_copied_once_per_slot_device_not_once_per_receiver(rigs):
    """Three receivers sharing cuda:0 cost the sender no more device memory than one, but for a slot more of the
    pool (a slot still held when the next send begins): a copy per receiver costs three times as much."""
    one = _grown(rigs, 1)
    three = _grown(rigs, 3)
    if one < COUNTED:
        checked_nothing(f"the sender's process allocated {one} bytes through torch for {COUNTED} bytes of weights: "
                        "its slots live outside torch's allocator, where this test cannot count them")
    assert three <= one + COUNTED, (
        f"CUDA-1 violated: with three receivers on cuda:0 the sender holds {three} bytes of device memory, with one "
        f"{one}: a version of {COUNTED} bytes is copied once per receiver, not once per slot device")


@pytest.mark.req("CUDA-1", "INIT-3")
@pytest.mark.needs("mapping")
@pytest.mark.parametrize("target_on", ["cuda:0", "cpu"])
def test_a_target_must_live_on_the_slot_device(ws, target_on):
    """A receiver whose slot device is cuda:0 takes a target there, and each version lands in it; a target on the
    CPU is refused at connect (WeightsMismatchError there, ReceiverError naming it at the sender) and left as it
    was."""
    weights = basic(0, "cuda:0")
    target = {n: torch.zeros(t.shape, dtype=t.dtype, device=target_on) for n, t in weights.items()}
    with ws.Sender(weights, 1, devices=["cuda:0"]) as sender:
        r, tx, rx = _connect_one(ws, sender, target=target)
        try:
            if target_on == "cpu":
                assert tx[0] == "err" and isinstance(tx[1], ws.ReceiverError) and tx[1].workers == [0], (
                    f"INIT-3 violated: sender.connect with receiver 0's target on the CPU and its slots on cuda:0 "
                    f"gave {tx!r}, not ReceiverError naming 0")
                assert rx[0] == "err" and isinstance(rx[1], ws.WeightsMismatchError), (
                    f"INIT-3 violated: receiver.connect with a target on the CPU for slots on cuda:0 gave {rx!r}, "
                    "not WeightsMismatchError")
                assert all(int(t.count_nonzero()) == 0 for t in target.values()), (
                    "INIT-3 violated: a refused target was written")
                return
            assert tx[0] == "ok" and rx == ("ok", 0), (
                f"CUDA-1 violated: a receiver whose target is on its slot device cuda:0 did not connect: {tx!r}, "
                f"{rx!r}")
            for k in (0, 1):
                if k:
                    waited(sender.send_async(basic(1, "cuda:0"), timeout=tm.T), "CUDA-1")
                torch.cuda.synchronize()
                assert {str(t.device.type) for t in target.values()} == {"cuda"}, "CUDA-1 violated: the target moved"
                assert describe(target) == describe(basic(k)), (
                    f"ACK-3 violated: the target on cuda:0 does not hold version {k}")
        finally:
            r.close()


@pytest.mark.req("CUDA-2", "ZC-1", "CONS-1")
@pytest.mark.needs("zero_copy")
def test_zero_copy_views_of_a_gpu_slot_show_only_complete_versions(rigs):
    """Zero-copy receivers on cuda:0 read continuously while megabyte versions are published back to back: every
    read sees one whole version, never a slot whose bytes are still being copied."""
    spec = [("big", torch.float32, (1024, 1024)), ("n", torch.int64, ())]
    rig = rigs({n: t.cuda() for n, t in S.distinct_weights(spec, 0).items()}, 2, devices=["cuda:0"] * 2,
               zero_copy=[True, True], targets=None)
    for w in rig.workers:
        w.call("reader_start")
    for k in range(1, 16):
        new = {n: t.cuda() for n, t in S.distinct_weights(spec, k).items()}
        torch.cuda._sleep(SLEEP_CYCLES // 10)  # the trainer's stream is busy: the copy of version k lands late
        rig.send(new)
    for i, w in enumerate(rig.workers):
        obs = w.call("reader_stop")
        assert not obs["errors"], f"CUDA-2 violated: zero-copy receiver {i}'s reader saw {obs['errors'][:2]}"
        for (v, d), _ in obs["observed"]:
            assert d == rig.model.digests[v], (
                f"CUDA-2 violated: zero-copy receiver {i} saw version {v} with incomplete bytes")
    rig.check()


#: Elements of the tensors the ordering tests write on the GPU (64 MiB of float32): a copy of them takes long
#: enough for a write racing with it to land inside it.
LARGE = 1 << 24


@pytest.mark.req("CUDA-2", "ACK-3")
def test_the_trainers_writes_after_send_async_do_not_reach_that_version(ws):
    """The trainer's stream is busy when it writes version v in place, calls send_async(), and at once writes the
    next step's values on the same stream: the receiver must hold v exactly, none of what was written after."""
    w = {"w": torch.zeros(LARGE, device="cuda:0")}
    with ws.Sender(w, 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s)
        try:
            for v in (1, 2, 3):
                torch.cuda._sleep(SLEEP_CYCLES)  # the trainer's stream is busy: version v is written late
                w["w"].fill_(float(v))
                future = s.send_async(w, timeout=tm.T)
                w["w"].fill_(-1.0)  # the next step's write, queued on the same stream as soon as send_async returned
                waited(future, "CUDA-2")
                with r.reading():
                    wrong = int((r.weights["w"] != float(v)).sum())
                assert wrong == 0, (
                    f"CUDA-2 violated: {wrong} of {LARGE} elements of version {v} are not what the trainer wrote "
                    "before send_async(): the copy did not wait for the trainer's stream, or its next write "
                    "overtook the copy")
        finally:
            r.close()


@pytest.mark.req("CUDA-2", "ACK-3")
@pytest.mark.parametrize("source", ["cpu", "cuda:0"])
def test_the_first_version_in_a_new_gpu_slot_holds_no_zeros_of_its_fill(ws, source):
    """256 MiB of integers none of which is zero, on the CPU or on the GPU, written into the sender's first slots on
    cuda:0 while the caller's stream is still busy: a zero fill of a slot that ran after the write (a fill queued on
    the caller's stream, a write on another) would leave zeros where the version has none."""
    g = torch.Generator().manual_seed(3)
    w = {"w": torch.randint(1, 2**31 - 1, (1 << 26,), dtype=torch.int32, generator=g).to(source)}
    torch.cuda._sleep(SLEEP_CYCLES)  # the caller's stream is busy while the sender makes its slots and writes them
    with ws.Sender(w, 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s)
        try:
            for v in (0, 1):
                if v:
                    w["w"][::4096] += 1
                    waited(s.send_async(w, timeout=tm.T), "CUDA-2")
                with r.reading():
                    held = r.weights["w"]
                    zeros = int((held == 0).sum())
                    same = torch.equal(held.cpu(), w["w"].cpu())
                assert zeros == 0, (f"CUDA-2 violated: version {v}, written into a new slot on cuda:0 from {source}, "
                                    f"holds {zeros} zeros: the slot's zero fill ran after the write")
                assert same, f"ACK-3 violated: version {v} from {source} differs on cuda:0"
        finally:
            r.close()


@pytest.mark.req("CUDA-6")
@pytest.mark.needs("mapping")
def test_the_first_apply_follows_the_callers_work_on_its_target(ws):
    """The thread that calls connect() first queues its target's initialisation behind a long kernel: version 0,
    applied at connect, must land after it (zeros), not under it (sevens)."""
    target = {"w": torch.empty(1 << 20, device="cuda:0")}

    def initialise():
        torch.cuda._sleep(SLEEP_CYCLES)
        target["w"].fill_(7.0)  # the caller's initialisation, queued behind the sleep

    with ws.Sender({"w": torch.zeros(1 << 20)}, 1, devices=["cuda:0"]) as s:
        r, tx, rx = _connect_one(ws, s, before=initialise, target=target)
        try:
            assert tx[0] == "ok" and rx == ("ok", 0), f"INIT-4 violated: the handshake gave {tx!r}, {rx!r}"
            torch.cuda.synchronize()
            left = int((target["w"] != 0).sum())
            assert left == 0, (f"CUDA-6 violated: {left} elements of the target hold the caller's initialisation "
                               "after connect(): version 0's apply ran before the work queued before connect()")
        finally:
            r.close()


@pytest.mark.req("CUDA-6")
@pytest.mark.parametrize("where", ["another thread", "a stream of its own"])
def test_no_apply_overtakes_gpu_work_queued_inside_reading_elsewhere(ws, where):
    """As the test above, with the reading() block in a second thread of the receiver's process, or on a current
    stream that is not the default one: the kernel it queued must still read version 0 however many versions
    follow."""
    n = 1 << 20
    with ws.Sender({"w": torch.zeros(n)}, 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s)
        try:
            box: dict = {}

            def read():
                stream = torch.cuda.Stream() if where == "a stream of its own" else None
                with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                    with r.reading():
                        torch.cuda._sleep(SLEEP_CYCLES)
                        box["snapshot"] = r.weights["w"].clone()  # queued behind the sleep
                box["stream"] = stream  # kept alive until the end

            if where == "another thread":
                t = threading.Thread(target=read, name="conformance-gpu-reader", daemon=True)
                t.start()
                t.join(tm.T)
            else:
                read()
            assert "snapshot" in box, "the reading() block did not end"
            for v in range(1, 4):
                s.send({"w": torch.full((n,), float(v))}, timeout=tm.T)
            torch.cuda.synchronize()
            changed = int((box["snapshot"] != 0).sum())
            assert changed == 0, (f"CUDA-6 violated: a kernel queued inside reading() in {where} read {changed} "
                                  "elements of a later version: the apply overtook it")
        finally:
            r.close()


SHUTDOWN = textwrap.dedent('''
    import importlib, sys, time, torch, torch.multiprocessing as mp

    def receive(impl, handle, q):
        ws = importlib.import_module(impl)
        with ws.Receiver(handle) as r:
            r.connect(60)
            deadline = time.monotonic() + 60
            while r.version != 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            with r.reading():
                q.put((r.version, float(sum(t.double().sum() for t in r.weights.values()))))

    def weights(v):
        return {f"t{i}": torch.full((1000,), float(v + i), device="cuda:0") for i in range(20)}

    if __name__ == "__main__":
        impl = sys.argv[1]
        ws = importlib.import_module(impl)
        ctx = mp.get_context("spawn")
        sender = ws.Sender(weights(0), 2, devices=["cuda:0", "cuda:0"])
        q = ctx.Queue()
        procs = [ctx.Process(target=receive, args=(impl, sender.handle(i), q)) for i in range(2)]
        for p in procs:
            p.start()
        sender.connect(timeout=120)
        for v in range(1, 4):
            sender.send(weights(v), timeout=60)
        got = sorted(q.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(60)
        sender.close()
        print("done", [p.exitcode for p in procs], got)
''')


@pytest.mark.req("CUDA-4")
def test_a_normal_shutdown_prints_no_cuda_ipc_warning_in_any_process(ws, tmp_path):
    """A trainer and two receiver processes on cuda:0 that all end normally (the receivers close and exit, then the
    sender closes and its process exits): nothing any of the three processes prints speaks of CUDA IPC."""
    script = tmp_path / "shutdown.py"
    script.write_text(SHUTDOWN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    bound = max(180.0, 6 * tm.T)
    try:
        out = subprocess.run([sys.executable, str(script), ws.__name__], capture_output=True, text=True,
                             timeout=bound, env=env)
    except subprocess.TimeoutExpired:
        in_time(False, f"CUDA-4 violated: a trainer and two receivers on cuda:0 had not ended {bound:.0f} s after "
                       "they started")
        return
    want = float(sum(3 + i for i in range(20)) * 1000)
    assert out.returncode == 0 and f"done [0, 0] [(3, {want}), (3, {want})]" in out.stdout, (
        f"CUDA-4 violated: the normal run did not end as expected (exit {out.returncode}): "
        f"{out.stdout[-1500:]}{out.stderr[-2500:]}")
    said = out.stdout + out.stderr
    assert "IPC" not in said and "Producer process" not in said, (
        f"CUDA-4 violated: a normal shutdown printed CUDA IPC warnings: {said[-2500:]}")


@pytest.mark.req("CUDA-4")
@pytest.mark.parametrize("zero_copy", [False, pytest.param(True, marks=pytest.mark.needs("zero_copy"))],
                         ids=["copy", "zero-copy"])
def test_a_receivers_close_releases_its_mappings(rigs, zero_copy):
    """The sender closes first, while its receiver on cuda:0 still maps the slots: their memory stays allocated in
    the sender's process (a slot a receiver maps is freed only once its last mapping is released). Then the receiver
    closes: the slots must become free, torch reclaiming them at its next collection."""
    weights = {"w": torch.zeros(LARGE, device="cuda:0")}
    before = _settled()
    rig = rigs(weights, 1, devices=["cuda:0"], zero_copy=[zero_copy], targets=None)
    for k in (1, 2):
        weights["w"].fill_(float(k))
        rig.send(weights)
    rig.check()
    rig.sender.close()
    held = _settled() - before
    if held < LARGE * 4:
        checked_nothing(f"once the sender closed, its process held {held} bytes more than before for slots of "
                        f"{LARGE * 4} bytes a receiver still maps: nothing is left for the receiver's close to release")
    rig.workers[0].call("close")
    deadline = time.monotonic() + tm.T
    while (left := _settled() - before) > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left <= 0, (f"CUDA-4 violated: {left} bytes of the slots on cuda:0 were still allocated {tm.T:.0f} s "
                       f"after the {'zero-copy' if zero_copy else 'copying'} receiver that mapped them closed: it did "
                       "not release its mappings")


@pytest.mark.req("CUDA-4", "CUDA-5")
def test_an_in_process_receiver_lets_close_free_every_slot(ws):
    """A receiver in the sender's process connects, takes two versions and closes; then the sender closes: every
    byte of device memory the sender's process allocated for its slots is free again."""
    weights = {"w": torch.zeros(LARGE, device="cuda:0")}
    before = _settled()
    s = ws.Sender(weights, 1, devices=["cuda:0"])
    try:
        r = in_process(ws, s)
        for v in (1, 2):
            weights["w"].fill_(float(v))
            s.send(weights, timeout=tm.T)
        r.close()
        del r
    finally:
        s.close()
    left = _settled() - before
    assert left <= 0, (f"CUDA-4 violated: {left} bytes of device memory are still allocated after an in-process "
                       "receiver and then its sender closed")


@pytest.mark.req("CUDA-5", "WIRE-4")
@pytest.mark.needs("wire")
def test_a_gpu_slot_travels_in_its_ipc_list_with_no_descriptor(ws):
    """A scripted receiver reads the Init of a sender whose slots are on cuda:0: each slot names its handle in
    `ipc`, and no file descriptor comes with the frame."""
    from .peers import ScriptedReceiver

    with ws.Sender(basic(0, "cuda:0"), 1, devices=["cuda:0"]) as sender:
        peer = ScriptedReceiver(sender.handle(0), 0)
        connecting = Background(lambda: sender.connect(tm.T), "conformance-sender-connect")
        try:
            msg, fds = peer.expect("Init", tm.T)
            for fd in fds:
                os.close(fd)
            slots = msg.get("slots") or []
            assert slots and all(s.get("ipc") for s in slots), (
                f"CUDA-5 violated: an Init for a receiver on cuda:0 lists slots without an ipc handle: {slots}")
            assert not fds, f"WIRE-4 violated: {len(fds)} descriptors came with an Init whose slots are all on cuda:0"
        finally:
            peer.close()
            connecting.join(tm.REACTION + tm.SLACK)


@pytest.mark.req("API-1")
def test_weights_on_two_devices_are_refused(ws):
    """Sender() of weights with one tensor on the CPU and one on cuda:0 raises NotImplementedError (API-1)."""
    try:
        s = ws.Sender({"a": torch.zeros(4), "b": torch.zeros(4, device="cuda:0")}, 1)
    except NotImplementedError:
        return
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"API-1 violated: Sender() of weights on two devices raised {type(e).__name__}: {e}, "
                             "not NotImplementedError") from None
    s.close()
    raise AssertionError("API-1 violated: Sender() accepted weights on the CPU and on cuda:0")


@pytest.mark.req("API-8")
@pytest.mark.needs("pack")
def test_pack_refuses_tensors_on_two_devices_before_anything_moves(ws):
    """pack() of a CPU tensor and a CUDA tensor raises an error that names devices, and neither tensor moves."""
    a, b = torch.arange(4.0), torch.arange(4.0, device="cuda:0")
    where = (a.data_ptr(), b.data_ptr())
    try:
        ws.pack({"a": a, "b": b})
    except Exception as e:  # noqa: BLE001 - the class is the binding's; what it says is the check
        assert "device" in str(e).lower(), (
            f"API-8 violated: pack() of tensors on two devices raised {type(e).__name__}: {e}, which does not say so")
    else:
        raise AssertionError("API-8 violated: pack() accepted tensors on the CPU and on cuda:0")
    assert (a.data_ptr(), b.data_ptr()) == where, "API-8 violated: a refused pack() moved a tensor"


def _connect_in_child(impl: str, handle, q) -> None:
    """A spawned receiver's connect(): ("ok", version), or ("err", the classes of what it raised, message)."""
    try:
        ws = importlib.import_module(impl)
        r = ws.Receiver(handle)
        try:
            q.put(("ok", r.connect(tm.T)))
        except Exception as e:  # noqa: BLE001 - the test judges it
            q.put(("err", [c.__name__ for c in type(e).__mro__], str(e)))
        finally:
            r.close()
    except Exception as e:  # noqa: BLE001
        q.put(("broke", f"{type(e).__name__}: {e}"))


@pytest.mark.req("CUDA-7", "INIT-6")
def test_a_receiver_that_cannot_see_the_slots_gpu_refuses_the_init(ws):
    """The receiver's process sees every GPU but the sender's (none, on a one-GPU machine): it must answer the Init
    with Ready(error): its connect() raises ReceiverError, the sender's names it, both within the bound. On a machine
    with one GPU that process sees none, so only the refusal is checked; with two or more, a receiver that maps the
    slot by index on another GPU is caught too."""
    device = f"cuda:{torch.cuda.device_count() - 1}"
    others = [f"GPU-{torch.cuda.get_device_properties(i).uuid}" for i in range(torch.cuda.device_count() - 1)]
    ctx = mp.get_context("spawn")
    with ws.Sender(basic(0, device), 1, devices=[device]) as s:
        q = ctx.Queue()
        p = _started_seeing(ctx, ",".join(others) or "-1", _connect_in_child, (ws.__name__, s.handle(0), q))
        try:
            expect_error(ws, "ReceiverError", s.connect, tm.T, ids="CUDA-7", naming=[0],
                         what="sender.connect() of a receiver that sees no GPU with the slot's UUID")
            got = q.get(timeout=tm.T + tm.SLACK)
        finally:
            p.join(tm.T)
            if p.is_alive():
                p.kill()
    assert got[0] == "err" and "ReceiverError" in got[1], (
        f"CUDA-7 violated: receiver.connect() in a process that cannot see the slot's GPU gave {got!r}, not "
        "ReceiverError")


# ---- the network profile with weights on GPUs (NET-7) ----


def _bytes(t: torch.Tensor) -> bytes:
    return t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()


@pytest.mark.req("NET-7", "NET-1")
@pytest.mark.needs("network", "rendezvous")
def test_a_gpu_trainers_init_over_tcp_names_host_memory(ws):
    """NET-7: a sender whose weights are on a GPU gives a receiver that joins over TCP an Init whose manifest names
    the CPU for every entry: the network carries host memory."""
    from .peers import Joiner

    with ws.Sender(basic(0, "cuda:0"), 1, listen="tcp://127.0.0.1:0") as sender:
        joiner = Joiner(sender.url(0))
        try:
            assert joiner.join().get("type") == "Welcome", "RDV-3: the URL's own secret was refused"
            t = threading.Thread(target=lambda: _connect_quietly(sender), daemon=True)
            t.start()
            init = joiner.handshake(answer=False, bound=tm.T)
            devices = {e["name"]: e["device"] for e in init["manifest"]}
            assert set(devices.values()) == {"cpu"}, f"NET-7 violated: a TCP receiver's Init names {devices}"
        finally:
            joiner.close()


def _connect_quietly(sender) -> None:
    try:
        sender.connect(timeout=tm.T)
    except Exception:  # noqa: BLE001 - the joiner never answers: only the Init it was sent matters here
        pass


@pytest.mark.req("NET-7", "ACK-3", "INIT-3")
@pytest.mark.needs("network", "rendezvous")
def test_gpu_weights_reach_a_gpu_target_over_tcp_bit_for_bit(ws):
    """NET-7: a trainer whose weights are on a GPU and a copying receiver whose target is on a GPU, joined over TCP:
    the target is taken at connect (its device is its own), stays on the GPU, and holds each version bit for bit."""
    target = {n: torch.zeros_like(t) for n, t in basic(0, "cuda:0").items()}
    with ws.Sender(basic(0, "cuda:0"), 1, listen="tcp://127.0.0.1:0") as sender:
        receiver = ws.Receiver(sender.url(0), target=target)
        try:
            joined: list = []
            t = threading.Thread(target=lambda: joined.append(receiver.connect(tm.T)), daemon=True)
            t.start()
            sender.connect(timeout=tm.T)
            t.join(tm.T)
            assert joined == [0], f"NET-7 violated: a target on a GPU was not taken over TCP ({joined})"
            for k in range(1, 4):
                weights = basic(k, "cuda:0")
                assert sender.send(weights, timeout=tm.T) == k
                with receiver.reading():
                    assert receiver.version == k
                    for name, want in weights.items():
                        got = target[name]
                        assert got.device.type == "cuda", f"NET-7 violated: {name} left the GPU ({got.device})"
                        assert _bytes(got) == _bytes(want), f"ACK-3 violated: {name} of version {k} differs"
        finally:
            receiver.close()


@pytest.mark.req("NET-7", "INIT-3")
@pytest.mark.needs("network", "rendezvous", "zero_copy", "module")
def test_a_zero_copy_receiver_over_tcp_refuses_a_target_on_a_gpu(ws):
    """NET-7: a zero-copy receiver's weights are its host buffers, so a module target on a GPU is refused at
    connect (WeightsMismatchError there, ReceiverError at the sender), never rebound to host memory."""
    module = torch.nn.Linear(4, 3).cuda()
    weights = {k: v.detach().clone() for k, v in module.state_dict().items()}
    with ws.Sender(weights, 1, listen="tcp://127.0.0.1:0") as sender:
        receiver = ws.Receiver(sender.url(0), target=module, zero_copy=True)
        raised: list = []

        def join():
            try:
                receiver.connect(tm.T)
            except Exception as e:  # noqa: BLE001 - what it raised is the observation
                raised.append(e)

        t = threading.Thread(target=join, daemon=True)
        t.start()
        try:
            try:
                sender.connect(timeout=tm.T)
                refused = None
            except Exception as e:  # noqa: BLE001
                refused = e
            t.join(tm.T)
            assert type(refused).__name__ == "ReceiverError", (
                f"NET-7 violated: a zero-copy receiver took a GPU target over TCP (sender.connect: {refused!r})")
            assert raised and type(raised[0]).__name__ == "WeightsMismatchError", (
                f"INIT-3 violated: receiver.connect raised {raised!r}, not WeightsMismatchError")
            assert all(p.device.type == "cuda" for p in module.parameters()), "NET-7 violated: the target was rebound"
        finally:
            receiver.close()
