"""What needs real processes: torn-read freedom, SIGKILL, resources, the demo.

The module's three worker processes are started once (the `workers` fixture)
and host a fresh receiver per test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing import resource_sharer

import pytest
import torch

import weightsync as ws
from conformance.probes import new_fds, open_fds

from .conftest import MANIFEST, shm_left, thread_names
from .workers import pattern, start_workers, stop_workers

pytestmark = pytest.mark.processes  # real worker processes: .ci/run's second layer


def attach(sender, workers, modes="push", timeout=30.0):
    """Hands each worker a handle, then runs both sides of the handshake."""
    modes = [modes] * len(workers) if isinstance(modes, str) else modes
    for i, (w, mode) in enumerate(zip(workers, modes)):
        w.call("attach", sender.handle(i), mode=mode)
    for w in workers:
        w.start("connect", timeout=timeout)
    sender.connect(timeout=timeout)
    return [w.result() for w in workers]


def detach(workers):
    for w in workers:
        if w.process.is_alive():
            w.call("close")


def test_versions_and_bytes_across_processes(workers):
    """SEND-1, ACK-3, CONS-5 with receivers in other processes, push and pull."""
    with ws.Sender(pattern(MANIFEST, 0), 3) as sender:
        assert attach(sender, workers, ["push", "pull", "push"]) == [0, 0, 0]
        try:
            for v in range(1, 4):
                fut = sender.send_async(pattern(MANIFEST, v), workers=[0, 1] if v == 2 else None)
                assert workers[1].call("poll", 10.0) == v
                assert fut.wait(timeout=10) == v
            for i, w in enumerate(workers):
                version, got = w.call("state")
                want = 3
                assert version == want
                for name, t in pattern(MANIFEST, want).items():
                    assert torch.equal(got[name], t), f"ACK-3 violated: worker {i} {name}"
        finally:
            detach(workers)


def test_no_torn_reads_while_the_sender_publishes_flat_out(workers):
    """CONS-1, CONS-2: readers in two processes never see a mix of versions."""
    big = [(f"w{i}", "float32", (64, 64)) for i in range(20)] + [("h", "bfloat16", (1000,)), ("n", "int64", (7,))]
    with ws.Sender(pattern(big, 0), 2) as sender:
        attach(sender, workers[:2])
        try:
            for w in workers[:2]:
                w.call("start_readers", 2)
            # At least 3 s and 30 versions, so a loaded machine still gets a real test.
            start, version = time.monotonic(), 0
            while (time.monotonic() - start < 3.0 or version < 30) and time.monotonic() - start < 60:
                version = sender.send(pattern(big, version + 1), timeout=10)
            stats = [w.call("stop_readers") for w in workers[:2]]
        finally:
            detach(workers[:2])
    for i, s in enumerate(stats):
        assert s["torn"] == 0, f"CONS-1 violated: worker {i} saw {s['torn']} torn reads in {s['reads']}"
        assert s["reads"] > 30 and len(s["versions"]) > 5, f"the readers barely ran: {s}"
    assert version >= 30


@pytest.mark.timeout(300)  # starts three workers of its own
def test_sigkilled_receiver_fails_the_send_without_timeout():
    """SEND-3, SEND-4, LIFE-2: a killed worker is named at once; a restarted one catches up."""
    pool = start_workers(2)
    try:
        with ws.Sender(pattern(MANIFEST, 0), 2) as sender:
            attach(sender, pool)
            sender.send(pattern(MANIFEST, 1), timeout=10)
            pool[1].kill()
            result = {}

            def send():
                try:
                    sender.send(pattern(MANIFEST, 2))  # no timeout on purpose
                except ws.WeightSyncError as e:
                    result["error"] = e

            t = threading.Thread(target=send, daemon=True)
            t0 = time.monotonic()
            t.start()
            t.join(timeout=20)
            assert not t.is_alive(), "SEND-3 violated: send hung on a dead receiver"
            err = result["error"]
            assert isinstance(err, ws.ReceiverDiedError) and err.workers == [1], err
            assert time.monotonic() - t0 < 10
            # restart worker 1 in a new process (LIFE-2)
            (fresh,) = start_workers(1)
            pool[1] = fresh
            fresh.call("attach", sender.handle(1))
            fresh.start("connect", timeout=30)
            sender.connect(timeout=30, workers=[1])
            assert fresh.result() == sender.version
            v = sender.send(pattern(MANIFEST, 5), timeout=10)
            assert [w.call("state")[0] for w in pool] == [v, v]
    finally:
        stop_workers(pool)


def test_everything_is_released_after_close(workers):
    """LIFE-4, LIFE-5: no descriptor, thread or /dev/shm entry left on either side."""
    shm_before = set(os.listdir("/dev/shm"))
    fds_before, threads_before = open_fds(), thread_names()
    remote_before = [w.call("resources") for w in workers]
    sender = ws.Sender({f"t{i}": torch.randn(100) for i in range(200)}, 3)
    attach(sender, workers, ["push", "pull", "push"])
    sender.send_async()
    workers[1].call("poll", 5.0)
    sender.close()
    detach(workers)
    # The first handle passed to a process starts the stdlib's resource sharer (a socket and a thread kept for the
    # process's life): not the sender's, and here only when this test runs first.
    resource_sharer.stop(timeout=5)
    assert new_fds(fds_before) == {}, "LIFE-4: the sender left descriptors open"
    assert thread_names() <= threads_before, "LIFE-4: the sender left threads running"
    assert not (left := shm_left(shm_before)), f"/dev/shm entries were left behind: {sorted(left)}"
    for w, before in zip(workers, remote_before):
        after = w.call("resources")
        assert set(after["threads"]) <= set(before["threads"]), f"LIFE-5: worker {w} left threads: {after}"
        assert new_fds(before["fds"], after["fds"]) == {}, f"LIFE-5: worker {w} left descriptors open"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_demo_runs_and_leaves_nothing_behind(mode):
    """The README's main job, small: exit 0, a summary, every check passed, no child left."""
    shm_before = set(os.listdir("/dev/shm"))
    out = subprocess.run(
        [sys.executable, "-m", "weightsync", "demo", "--params", "2e4", "--workers", "2", "--updates", "5", "--mode", mode],
        capture_output=True, text=True, timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "checks passed" in out.stdout and "result         ok" in out.stdout
    assert "update    5/5" in out.stdout
    assert not (left := shm_left(shm_before)), f"/dev/shm entries were left behind: {sorted(left)}"
    assert out.stderr.strip() == "", out.stderr


@pytest.mark.timeout(180)
def test_demo_stops_cleanly_on_ctrl_c():
    """Ctrl-C reaches the whole process group; the demo stops its workers and exits."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "weightsync", "demo", "--params", "1e4", "--workers", "2", "--updates", "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},  # the first "update" line now, not after 8 KB
        # A job started in the background inherits SIGINT ignored, and Python then
        # installs no KeyboardInterrupt handler: give the demo a terminal's default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for line in proc.stdout:
            if line.startswith("update"):
                break
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=45)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert not _session_processes(proc.pid, wait=10), "processes left behind"


def _session_processes(sid: int, wait: float) -> list[str]:
    """Processes still in session `sid` after up to `wait` seconds (multiprocessing's
    resource tracker exits once it reads end of file from its parent, not instantly)."""
    deadline = time.monotonic() + wait
    while True:
        left = subprocess.run(["pgrep", "-s", str(sid)], capture_output=True, text=True).stdout.split()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def test_a_plain_fork_worker_is_refused_at_once_and_the_trainer_told(tmp_path):
    """Issue 24 / CON-2: `multiprocessing.Process` under fork (no ctx given to the Sender): the worker's
    Receiver(handle) refuses the inherited handle naming CON-2, and the trainer's connect names the receiver
    as never connected within a second or two, not after its timeout."""
    import multiprocessing

    from .workers import forked_worker

    fork = multiprocessing.get_context("fork")  # Linux's default before Python 3.14, spelled out
    out = fork.Queue()
    with ws.Sender(pattern(MANIFEST, 0), 1) as sender:
        p = fork.Process(target=forked_worker, args=(sender.handle(0), out), daemon=True)
        p.start()
        try:
            said = out.get(timeout=30)
            assert said.startswith("LocalProtocolError") and "CON-2" in said and "spawn" in said, said
            p.join(10)
            t0 = time.monotonic()
            with pytest.raises(ws.ReceiverDiedError, match="never connected"):
                sender.connect(timeout=30)
            assert time.monotonic() - t0 < 10, "the trainer waited out its timeout for a refused worker"
        finally:
            p.kill()
            p.join(5)
