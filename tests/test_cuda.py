"""CUDA slots: device mapping, stream-ordered publication, lifetimes (CUDA-*).

Skipped, with the reason in the report, where no CUDA device is present.
"""

from __future__ import annotations

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
    assert len(sender._groups) == 1


def test_zero_copy_on_cuda(local):
    """ZC-1, CUDA-2: zero-copy views of a CUDA slot hold exactly the version acked."""
    sender, receivers = local(on("cuda", pattern(MANIFEST, 0)), n=2, zero_copy=True)
    for v, targets in enumerate([[0], [1], [0, 1]], start=1):
        sender.send(on("cuda", pattern(MANIFEST, v)), workers=targets, timeout=30)
    for r in receivers:
        assert_holds_cpu(r, pattern(MANIFEST, 3), 3)


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


def test_normal_shutdown_prints_no_cuda_ipc_warning(tmp_path):
    """CUDA-4: no 'Producer process ...' warning at exit after a normal shutdown."""
    script = tmp_path / "shutdown.py"
    script.write_text(textwrap.dedent("""
        import torch, torch.multiprocessing as mp, weightsync as ws

        def worker(handle):
            with ws.Receiver(handle, mode="pull") as r:
                r.connect(timeout=60)
                while not r.stopped:
                    r.poll(timeout=0.05)

        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            w = {f"t{i}": torch.randn(1000, device="cuda") for i in range(500)}
            sender = ws.Sender(w, 2, ctx=ctx)
            procs = [ctx.Process(target=worker, args=(sender.handle(i),)) for i in range(2)]
            for p in procs:
                p.start()
            sender.connect(timeout=120)
            for _ in range(5):
                sender.send(timeout=30)
            sender.close()
            for p in procs:
                p.join(60)
            print("done", [p.exitcode for p in procs])
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         cwd=str(Path(__file__).parent.parent))
    assert out.returncode == 0 and "done [0, 0]" in out.stdout, out.stderr[-3000:]
    assert "Producer process" not in out.stderr, out.stderr[-3000:]
