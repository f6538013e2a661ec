"""CUDA slots: device mapping, stream-ordered publication, lifetimes (CUDA-*).

Skipped, with the reason in the report, where no CUDA device is present.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

import weightsync as ws

from .conftest import MANIFEST
from .workers import pattern, start_workers, stop_workers

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def on(device, weights):
    return {k: v.to(device) for k, v in weights.items()}


@pytest.mark.parametrize(
    "source,slots",
    [("cuda", ["cuda", "cuda"]), ("cpu", ["cuda", "cuda"]), ("cuda", ["cpu", "cpu"]), ("cuda", ["cuda", "cpu"])],
)
def test_in_process_mixed_devices(local, source, slots):
    """CUDA-1, CUDA-2, ACK-3: every mix of sender and receiver devices delivers the same bytes."""
    sender, receivers = local(on(source, pattern(MANIFEST, 0)), n=2, devices=slots)
    for v in range(1, 4):
        sender.send(on(source, pattern(MANIFEST, v)), timeout=30)
        for r, dev in zip(receivers, slots):
            assert all(t.device.type == dev for t in r.weights.values())
            assert_holds_cpu(r, pattern(MANIFEST, v), v)


def assert_holds_cpu(receiver, expected, version):
    assert receiver.version == version
    with receiver.reading():
        got = {k: v.cpu() for k, v in receiver.weights.items()}
    for name, t in expected.items():
        assert torch.equal(got[name].reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8)), name


def test_sender_copies_once_per_device_not_per_receiver(local):
    """CUDA-1, CUDA-5, LAYOUT-2: four in-process receivers on one GPU share one slot group."""
    sender, _ = local(on("cuda", pattern(MANIFEST, 0)), n=4)
    assert list(sender._hub.pool.groups) == [torch.device('cuda', torch.cuda.current_device())]


def test_zero_copy_on_cuda(local):
    """ZC-1, CUDA-2: zero-copy views of a CUDA slot hold exactly the version acked."""
    sender, receivers = local(on("cuda", pattern(MANIFEST, 0)), n=2, zero_copy=True)
    for v, targets in enumerate([[0], [1], [0, 1]], start=1):
        sender.send(on("cuda", pattern(MANIFEST, v)), workers=targets, timeout=30)
    for r in receivers:
        assert_holds_cpu(r, pattern(MANIFEST, 3), 3)


@pytest.mark.parametrize("gather_below", [1 << 20, 64])
def test_the_packer_on_a_gpu_writes_what_per_tensor_copies_write(gather_below, monkeypatch):
    """LAYOUT-2, CUDA-1: runs of arrays on the slot's GPU are gathered in one kernel; the bytes are those
    of a copy per array (runs, odd sizes, 0-d, empty, bf16 and int beside fp32, a transposed view); with
    the bound lowered, every array of a run left to copy_ is copied."""
    from weightsync import layout

    monkeypatch.setattr(layout, "_GATHER_BELOW", gather_below)
    monkeypatch.setattr(layout, "_GATHER_FROM", 2)  # these 40 arrays form a run
    g = torch.Generator().manual_seed(1)
    flat = {f"r{i}": torch.randn(16, 16, generator=g) for i in range(40)}  # 1 KiB each: one run
    flat.update({"odd": torch.randn(3, generator=g), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4),
                 "half": torch.randn(32, 8, generator=g).bfloat16(), "ints": torch.arange(64),
                 "t": torch.randn(8, 16, generator=g).T})
    flat.update({f"s{i}": torch.randn(64, generator=g) for i in range(20)})
    flat = {k: v.cuda() for k, v in flat.items()}
    manifest = tuple(dataclasses.replace(e, device="cuda:0") for e in layout.make_manifest(flat))
    nbytes = layout.slot_nbytes(manifest, "cuda:0")
    want = torch.full((nbytes,), 0xAB, dtype=torch.uint8, device="cuda")
    for v, t in zip(layout.views(want, manifest), flat.values()):
        v.copy_(t)
    got = torch.full((nbytes,), 0xAB, dtype=torch.uint8, device="cuda")
    packer = layout.Packer(got, manifest, source=torch.device("cuda", 0))
    assert packer.runs if gather_below > 64 else not packer.runs
    packer.write(list(flat.values()))
    torch.cuda.synchronize()
    assert torch.equal(got, want)


def test_a_model_of_many_small_arrays_reaches_cuda_receivers_whole(local):
    """LAYOUT-2, ACK-3, CUDA-2: 300 small arrays gathered into the slot on the GPU; copy and zero-copy
    receivers hold every byte of each version."""
    def weights(v):
        g = torch.Generator().manual_seed(v)
        return {f"w{i}": torch.randn(32, 16, generator=g).cuda() for i in range(300)}

    for zero_copy in (False, True):
        sender, receivers = local(weights(0), n=2, zero_copy=zero_copy)
        for v in (1, 2):
            sender.send(weights(v), timeout=30)
            for r in receivers:
                assert_holds_cpu(r, {k: t.cpu() for k, t in weights(v).items()}, v)


def _llm_like(v: int, device: str = "cuda") -> dict[str, torch.Tensor]:
    """fp32 weights whose bf16 rounding is not the identity, an int counter beside them."""
    g = torch.Generator().manual_seed(v)
    return {"w": (torch.randn(64, 33, generator=g) * 3.3).to(device), "b": torch.randn(7, generator=g).to(device),
            "step": torch.tensor(v).to(device)}


@pytest.mark.parametrize("zero_copy", [False, True])
def test_cast_slots_on_cuda(local, zero_copy):
    """LAYOUT-3, CUDA-1: fp32 CUDA weights reach bf16 slots on the GPU and on the CPU rounded as torch rounds,
    an fp32 receiver beside them bit for bit, an int entry unchanged; one slot group per (device, dtype)."""
    slots, casts = ["cuda", "cuda", "cpu"], [torch.bfloat16, None, torch.bfloat16]
    sender, receivers = local(_llm_like(0), n=3, devices=slots, dtypes=casts, zero_copy=zero_copy)
    gpu = torch.device("cuda", torch.cuda.current_device())
    assert set(sender._hub.pool.groups) == {(gpu, torch.bfloat16), gpu, (torch.device("cpu"), torch.bfloat16)}
    for v in (1, 2, 3):
        sent = _llm_like(v)
        sender.send(sent, workers=[0, 1, 2] if v != 2 else [0], timeout=30)
        for i, (r, dev, cast) in enumerate(zip(receivers, slots, casts)):
            held = v if v != 2 or i == 0 else 1
            want = _llm_like(held, "cpu")
            assert r.version == held
            with r.reading():
                got = {k: (t.device.type, t.cpu()) for k, t in r.weights.items()}
            for name, t in want.items():
                t = t.to(cast) if cast is not None and t.is_floating_point() else t
                assert got[name][0] == dev and got[name][1].dtype == t.dtype, (i, name, got[name])
                assert torch.equal(got[name][1], t), (i, name)


def test_cast_slots_on_cuda_across_processes(workers):
    """LAYOUT-3, CUDA-2: a bf16 CUDA slot reaches a receiver in another process through CUDA IPC."""
    with ws.Sender(_llm_like(0), 1, dtypes=torch.bfloat16) as sender:
        _attach(sender, workers[:1])
        for v in (1, 2):
            sender.send(_llm_like(v), timeout=30)
        got_version, got = workers[0].call("state")
        workers[0].call("close")
    assert got_version == 2
    for name, t in _llm_like(2, "cpu").items():
        t = t.bfloat16() if t.is_floating_point() else t
        assert got[name].dtype == t.dtype and torch.equal(got[name].cpu(), t), name


def _attach(sender, pool, mode="push"):
    for i, w in enumerate(pool):
        w.call("attach", sender.handle(i), mode=mode)
    for w in pool:
        w.start("connect", timeout=60)
    sender.connect(timeout=60)
    return [w.result(timeout=60) for w in pool]


def test_cuda_ipc_across_processes_without_torn_reads(workers):
    """CUDA-2, CUDA-3, CONS-1: readers in other processes never see a half-published version."""
    cuda_workers = workers[:2]
    big = [(f"w{i}", "float32", (256, 256)) for i in range(16)]
    with ws.Sender(on("cuda", pattern(big, 0)), 2) as sender:
        _attach(sender, cuda_workers)
        for w in cuda_workers:
            w.call("start_readers", 2)
        deadline, version = time.monotonic() + 3.0, 0
        while time.monotonic() < deadline:
            version = sender.send(on("cuda", pattern(big, version + 1)), timeout=30)
        stats = [w.call("stop_readers") for w in cuda_workers]
        for w in cuda_workers:
            got_version, got = w.call("state")
            assert got_version == version
            assert all(torch.equal(got[k], v) for k, v in pattern(big, version).items())
        for w in cuda_workers:
            w.call("close")
    assert all(s["torn"] == 0 and s["reads"] > 10 for s in stats), stats


def test_sigkilled_cuda_receiver_neither_hangs_nor_crashes_the_sender():
    """CUDA-4, SEND-3."""
    pool = start_workers(2)
    try:
        sender = ws.Sender(on("cuda", pattern(MANIFEST, 0)), 2)
        _attach(sender, pool)
        pool[0].kill()
        result = {}
        t = threading.Thread(target=lambda: result.update(e=_error(lambda: sender.send(on("cuda", pattern(MANIFEST, 1))))))
        t.start()
        t.join(30)
        assert not t.is_alive() and isinstance(result["e"], ws.ReceiverDiedError) and result["e"].workers == [0]
        assert sender.send(on("cuda", pattern(MANIFEST, 2)), workers=[1], timeout=30) >= 1
        pool[1].call("close")
        sender.close()
    finally:
        stop_workers(pool)


def _error(fn):
    try:
        fn()
    except ws.WeightSyncError as e:
        return e


SCRIPT = textwrap.dedent("""
    import os, sys, torch, torch.multiprocessing as mp, weightsync as ws

    def worker(handle, visible, q):
        if visible is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible  # before this process touches CUDA
        with ws.Receiver(handle, mode="pull") as r:
            r.connect(timeout=60)
            got = None
            while not r.stopped:
                if r.poll(timeout=0.05) is not None:
                    with r.reading():
                        got = (r.version, float(sum(t.double().sum() for t in r.weights.values())),
                               sorted({str(t.device) for t in r.weights.values()}))
            q.put(got)

    def weights(v, device):
        return {f"t{i}": torch.full((1000,), float(v + i), device=device) for i in range(200)}

    if __name__ == "__main__":
        where, visible = sys.argv[1], sys.argv[2] if sys.argv[2] != "-" else None
        ctx = mp.get_context("spawn")
        device = f"cuda:{torch.cuda.device_count() - 1}"
        sender = ws.Sender(weights(0, device), 2, ctx=ctx)
        q = ctx.Queue()
        if where == "threads":
            import threading
            rs = [ws.Receiver(sender.handle(i)) for i in range(2)]  # push: send() returns once both applied
            ts = [threading.Thread(target=r.connect, args=(60,)) for r in rs]
            for t in ts: t.start()
            sender.connect(timeout=120)
            for t in ts: t.join(60)
            for v in range(1, 6):
                sender.send(weights(v, device), timeout=30)
            got = []
            for r in rs:
                with r.reading():
                    got.append((r.version, float(sum(t.double().sum() for t in r.weights.values()))))
            for r in rs: r.close()
            sender.close()
            print("done", got)
            sys.exit(0)
        procs = [ctx.Process(target=worker, args=(sender.handle(i), visible, q)) for i in range(2)]
        for p in procs:
            p.start()
        sender.connect(timeout=120)
        for v in range(1, 6):
            sender.send(weights(v, device), timeout=30)
        sender.close()
        got = [q.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(60)
        print("done", [p.exitcode for p in procs], got)
""")

WANT = float(sum(5 + i for i in range(200)) * 1000)


def _uuid(index: int) -> str:
    return f"GPU-{torch.cuda.get_device_properties(index).uuid}"


@pytest.mark.parametrize("case", ["plain", "expandable-segments", "visible-by-uuid", "only-its-gpu", "in-process"])
def test_normal_shutdown_delivers_and_prints_no_cuda_ipc_warning(tmp_path, case):
    """CUDA-4, CUDA-7: receivers in other processes (or threads) get every byte; no IPC warning at exit.

    expandable-segments: the trainer sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    visible-by-uuid / only-its-gpu: each receiver sees the sender's GPU (the last one) under
    another name: as GPU-<uuid>, or as its only device (cuda:0 there; with one GPU the index
    happens to match, so only a machine with two or more can catch a raw index).
    in-process: receivers in the sender's process return their share counts (CUDA-5).
    """
    script = tmp_path / "shutdown.py"
    script.write_text(SCRIPT)
    last = torch.cuda.device_count() - 1
    env = dict(os.environ)
    visible = {"visible-by-uuid": _uuid(last), "only-its-gpu": str(last)}.get(case, "-")
    if case == "expandable-segments":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    where = "threads" if case == "in-process" else "procs"
    out = subprocess.run([sys.executable, str(script), where, visible], capture_output=True, text=True, timeout=300,
                         cwd=str(Path(__file__).parent.parent), env=env)
    assert out.returncode == 0 and "done" in out.stdout, out.stdout[-2000:] + out.stderr[-3000:]
    if where == "threads":
        assert f"[(5, {WANT}), (5, {WANT})]" in out.stdout, out.stdout
    else:
        dev = "cuda:0" if visible != "-" else f"cuda:{last}"  # a receiver that sees one GPU calls it cuda:0
        assert f"[0, 0] [(5, {WANT}, ['{dev}']), (5, {WANT}, ['{dev}'])]" in out.stdout, out.stdout
    assert "Producer process" not in out.stderr, out.stderr[-3000:]


# ---- findings of the desk review (issue 26): each fails on the code before its fix ----

SLEEP_CYCLES = 300_000_000  # ~0.15 s of GPU time on an H100: far longer than an apply


def test_in_process_receivers_read_their_own_small_slot(local):
    """CUDA-5: small slots share one allocator segment, so one IPC handle; each is found by (handle, offset)."""
    small = {"a": torch.zeros(16, device="cuda"), "b": torch.zeros(3, dtype=torch.int64, device="cuda")}
    sender, receivers = local(small, n=2)
    for v in range(1, 5):
        w = {"a": torch.full((16,), float(v), device="cuda"), "b": torch.full((3,), v, device="cuda")}
        sender.send(w, timeout=30)
        for r in receivers:
            assert_holds_cpu(r, {k: t.cpu() for k, t in w.items()}, v)


def test_apply_waits_for_gpu_work_queued_inside_reading(local):
    """CUDA-6: kernels a reader queued inside reading() run before the next apply overwrites the weights.

    The weights live on the CPU: a CUDA source would make the sender's write wait on this
    thread's stream, which would hide the receiver's own ordering.
    """
    sender, (r,) = local({"w": torch.zeros(1 << 20)}, n=1, devices=["cuda"])
    with r.reading():
        torch.cuda._sleep(SLEEP_CYCLES)
        snapshot = r.weights["w"].clone()  # queued behind the sleep, reads version 0
    sender.send({"w": torch.ones(1 << 20)}, timeout=30)
    torch.cuda.synchronize()
    assert snapshot.sum().item() == 0, "the apply overwrote weights a kernel queued inside reading() still read"


def test_first_apply_waits_for_the_targets_initialisation(local):
    """CUDA-6: connect()'s apply follows the GPU work the caller queued on its target before connect()."""
    target = {"w": torch.empty(1 << 20, device="cuda")}
    torch.cuda._sleep(SLEEP_CYCLES)
    target["w"].fill_(7.0)  # the caller's initialisation, queued behind the sleep
    local({"w": torch.zeros(1 << 20)}, n=1, devices=["cuda"], targets=[target])
    torch.cuda.synchronize()
    assert target["w"].sum().item() == 0, "the initialisation ran after connect()'s apply and overwrote version 0"


def test_zero_copy_slot_is_not_rewritten_under_queued_reads(local):
    """CUDA-3, CUDA-6, SLOT-2: a zero-copy receiver's ack does not release a slot its queued kernels still read."""
    sender, (r,) = local({"w": torch.zeros(1 << 20)}, n=1, zero_copy=True, devices=["cuda"])
    with r.reading():
        torch.cuda._sleep(SLEEP_CYCLES)
        snapshot = r.weights["w"].clone()  # reads the slot of version 0
    for v in range(1, 4):  # three slots: version 0's is rewritten by one of these
        sender.send({"w": torch.full((1 << 20,), float(v))}, timeout=30)
    torch.cuda.synchronize()
    assert snapshot.sum().item() == 0, "the sender rewrote a slot a zero-copy reader's kernel still read"


def test_large_cpu_source_arrives_bit_for_bit(local):
    """CUDA-1, CUDA-2: a CPU source of 1 GiB into a new CUDA slot; the write is ordered after the slot's zero fill."""
    big = {"w": torch.randint(-2**31, 2**31 - 1, (1 << 28,), dtype=torch.int32)}
    sender, (r,) = local(big, n=1, devices=["cuda"])
    with r.reading():
        assert torch.equal(r.weights["w"].cpu(), big["w"])
    big["w"][::4096] += 1
    sender.send(big, timeout=60)
    with r.reading():
        assert torch.equal(r.weights["w"].cpu(), big["w"])


@pytest.mark.parametrize("source", ["cuda", "cpu"])
def test_packed_weights_reach_a_cuda_slot_whole(local, source):
    """API-8, CUDA-1, CUDA-2: a packed buffer, on the GPU or the CPU, is written into a CUDA slot as one copy."""
    packed = ws.pack(on(source, pattern(MANIFEST, 0)))
    sender, (r,) = local(packed, n=1, devices=["cuda"])
    for v in (1, 2):
        with torch.no_grad():
            for name, new in on(source, pattern(MANIFEST, v)).items():
                packed[name].copy_(new)
        sender.send(packed, timeout=30)
        assert_holds_cpu(r, pattern(MANIFEST, v), v)


def test_closed_zero_copy_receiver_keeps_its_weights_and_lets_the_slot_go(local):
    """CUDA-4, LIFE-5: close() gives a zero-copy receiver copies of its version; the slots may then be reused."""
    sender, (r, _) = local(on("cuda", pattern(MANIFEST, 0)), n=2, zero_copy=True)
    sender.send(on("cuda", pattern(MANIFEST, 1)), timeout=30)
    r.close()
    weights = dict(r.weights)
    for v in range(2, 6):  # every slot is rewritten; the closed receiver's copies must not change
        sender.send(on("cuda", pattern(MANIFEST, v)), workers=[1], timeout=30)
    for name, t in pattern(MANIFEST, 1).items():
        got = weights[name].cpu().reshape(-1).view(torch.uint8)
        assert torch.equal(got, t.reshape(-1).view(torch.uint8)), name


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_gpu_weights_cross_tcp_into_a_gpu_target_bit_for_bit(mode):
    """NET-7, ACK-3: a trainer whose weights are on a GPU, listening on TCP, and a receiver whose target is on the
    GPU: host memory crosses the network (the slots and the Init's manifest are on the CPU), and each version lands
    in the target's own tensors, on the GPU, bit for bit."""
    weights = on("cuda", pattern(MANIFEST, 0))
    target = {k: torch.zeros_like(v) for k, v in weights.items()}
    held = {k: v.data_ptr() for k, v in target.items()}
    with ws.Sender(weights, 1, listen="tcp://127.0.0.1:0") as sender:
        assert {e.device for e in sender.manifest} == {f"cuda:{torch.cuda.current_device()}"}
        assert [d.type for d in sender._hub.pool.groups] == ["cpu"], "NET-7: a TCP listener's slots are host memory"
        receiver = ws.Receiver(sender.url(0), target=target, mode=mode)
        try:
            joining = threading.Thread(target=receiver.connect, args=(60,), daemon=True)
            joining.start()
            sender.connect(timeout=60)
            joining.join(60)
            assert receiver.version == 0
            for v in range(1, 4):
                future = sender.send_async(on("cuda", pattern(MANIFEST, v)), timeout=30)
                if mode == "pull":
                    deadline = time.monotonic() + 30
                    while receiver.version != v and time.monotonic() < deadline:
                        receiver.poll(timeout=0.2)
                assert future.wait(timeout=30) == v
                assert all(t.device.type == "cuda" for t in target.values())
                assert {k: t.data_ptr() for k, t in target.items()} == held, "the target's own tensors are written"
                assert_holds_cpu(receiver, pattern(MANIFEST, v), v)
        finally:
            receiver.close()
