"""Every documented trainer shape, and a TCP worker, as scripts that end right after their `with` block (issue 39).

No thread of weightsync, nor of the torch.distributed objects it owns (gloo groups, TCPStores), may be alive
inside torch when the interpreter finalizes: a daemon thread that takes the GIL back then calls pthread_exit,
whose forced unwinding through torch's C++ frames ends in std::terminate ("terminate called without an
active exception", exit 134). The lane thread that dropped a receiver's gloo group after close() did, in 3 of
3 runs of a TCP trainer.

Each shape runs RUNS times (WEIGHTSYNC_EXIT_RUNS, 3 by default in CI's processes layer; the issue's acceptance is 20), PARALLEL runs at
a time (WEIGHTSYNC_EXIT_PARALLEL, 2); every process must exit 0 with nothing on stderr. `python
tests/test_exit_paths.py [RUNS] [SHAPE ...]` runs them outside pytest and prints the counts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import weightsync as ws
from weightsync import netplane

SCRIPT = str(Path(__file__).with_name("exit_shapes.py"))
RUNS = int(os.environ.get("WEIGHTSYNC_EXIT_RUNS", "3"))
PARALLEL = int(os.environ.get("WEIGHTSYNC_EXIT_PARALLEL", "2"))
#: Seconds one run (its trainer and its worker) may take; a run past it is killed and counted as failed.
RUN_BOUND = 120.0
#: Shape -> (trainer's arguments, the worker's mode or None when the trainer starts its own workers).
SHAPES = {
    "handles": (["handles"], None),
    "unix-url": (["trainer", "unix"], "push"),
    "tcp-url-pull": (["trainer", "tcp"], "pull"),
    "tcp-url-push": (["trainer", "tcp"], "push"),
    "tcp-close-and-return": (["oneprocess"], None),
    "tcp-slow-lane": (["slowlane"], None),
    "torchrl": (["torchrl"], None),
}


def _has_torchrl() -> bool:
    try:
        import torchrl  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Exit:
    """How one process of a run ended."""

    who: str
    rc: int | None  # None: killed at the run's bound
    stderr: str

    @property
    def clean(self) -> bool:
        return self.rc == 0 and not self.stderr.strip()

    def __str__(self) -> str:
        return f"{self.who}: exit {self.rc}, stderr {self.stderr.strip()[-1500:]!r}"


def _env() -> dict:
    reference = str(Path(__file__).parent.parent / "reference")
    return dict(os.environ, PYTHONFAULTHANDLER="1",
                PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), reference])))


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, SCRIPT, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=_env())


def _finish(who: str, proc: subprocess.Popen, end: float) -> Exit:
    try:
        _, err = proc.communicate(timeout=max(0.1, end - time.monotonic()))
        return Exit(who, proc.returncode, err)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return Exit(who, None, f"killed after {RUN_BOUND:.0f} s\n{err}")


def run_once(shape: str) -> list[Exit]:
    """One run of `shape`: its trainer, and the worker that joins by URL where the shape has one."""
    args, mode = SHAPES[shape]
    end = time.monotonic() + RUN_BOUND
    if mode is None:
        return [_finish(shape, _start(args), end)]
    with tempfile.TemporaryDirectory() as tmp:
        urlfile = os.path.join(tmp, "url")
        trainer = _start([*args, urlfile])
        while not os.path.exists(urlfile) and trainer.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        if not os.path.exists(urlfile):
            return [_finish(f"{shape} trainer (wrote no URL)", trainer, end)]
        with open(urlfile) as f:
            url = f.read()
        worker = _start(["worker", url, mode])  # as from another shell: it knows the URL, nothing else
        return [_finish(f"{shape} trainer", trainer, end), _finish(f"{shape} worker", worker, end)]


def run_many(shape: str, runs: int = RUNS, parallel: int = PARALLEL) -> list[list[Exit]]:
    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(lambda _: run_once(shape), range(runs)))


def _timeout() -> float:
    return 60 + RUNS * RUN_BOUND / PARALLEL / 3  # a run takes some seconds, not its bound


@pytest.mark.processes
@pytest.mark.timeout(_timeout())
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_script_that_ends_right_after_its_with_block_exits_0_with_nothing_on_stderr(shape):
    if shape == "torchrl" and not _has_torchrl():
        pytest.skip("torchrl is not installed (pip install torchrl==0.14.1)")
    results = run_many(shape)
    bad = [e for run in results for e in run if not e.clean]
    assert not bad, f"{len(bad)} of {sum(map(len, results))} processes in {len(results)} runs:\n" + "\n".join(
        map(str, bad[:5]))


def _started_since(before: set[threading.Thread], *names: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.name in names]


@pytest.mark.timeout(90)
def test_close_returns_once_no_thread_of_the_data_plane_runs():
    """The sender's close() waits for each lane thread, which drops its gloo group and store; the receiver's for
    its Inbound thread: none is left to do so while the interpreter finalizes (issue 39)."""
    before = set(threading.enumerate())
    sender = ws.Sender({"w": torch.zeros(1000)}, 1, listen="tcp://127.0.0.1:0")
    receiver = ws.Receiver(sender.url(0), mode="pull")
    try:
        joining = threading.Thread(target=receiver.connect, args=(60,), daemon=True)
        joining.start()
        sender.connect(timeout=60)
        joining.join(60)
        f = sender.send_async(timeout=30)
        deadline = time.monotonic() + 30
        while receiver.poll(timeout=0.2) is None and time.monotonic() < deadline:
            pass
        assert f.wait(timeout=30) == 1
        assert _started_since(before, "weightsync-lane"), "a TCP receiver's lane runs until close()"
        sender.close()
        assert not _started_since(before, "weightsync-lane"), "close() returned with a lane thread running"
        assert receiver.stopped
    finally:
        sender.close()
        receiver.close()
    assert not _started_since(before, "weightsync-inbound"), "close() returned with the Inbound thread running"


@pytest.mark.timeout(60)
def test_a_lane_stuck_in_a_transfer_holds_close_within_its_bound():
    """A send to a receiver that built its group and never receives (a frozen worker): gloo's abort() does not
    interrupt it (torch 2.13), so the lane ends at the transfer timeout; `end` waits for it no longer than its
    bound, aborted (no failure is reported after it), and names it."""
    store = netplane.Store("127.0.0.1", transfer_timeout=3.0)
    plane = store.data_plane("127.0.0.1", 64 << 20)
    failures: list[str] = []
    lane = netplane.Lane(store, plane, "127.0.0.1", failures.append)
    lane.submit(1, torch.zeros(64 << 20, dtype=torch.uint8))  # more than the sockets hold: it waits for a receive
    client = netplane._client("127.0.0.1", store.port, 10)
    netplane.dist.PrefixStore(plane.prefix, client).set(netplane.JOINED, "1")
    group = netplane._group(client, plane.prefix, 1, "127.0.0.1", 10)  # the receiver's side, never receiving
    try:
        time.sleep(0.3)  # the lane builds its side and starts the send
        t0 = time.monotonic()
        stuck = netplane.end([lane], 1.0)
        assert time.monotonic() - t0 < 2.5  # its bound (1 s), well short of the transfer's own (3 s)
        assert stuck in ([lane], []) and (lane.thread.is_alive() == bool(stuck))
        lane.thread.join(10)  # the transfer timeout (3 s) ends it
        assert not lane.thread.is_alive() and not failures, failures
    finally:
        del group


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    chosen = sys.argv[2:] or [s for s in SHAPES if s != "torchrl" or _has_torchrl()]
    for shape in chosen:
        t0 = time.monotonic()
        results = run_many(shape, n)
        clean = sum(all(e.clean for e in run) for run in results)
        print(f"{shape}: {clean} of {n} runs clean ({time.monotonic() - t0:.0f} s)", flush=True)
        for e in [e for run in results for e in run if not e.clean][:3]:
            print("   ", e, flush=True)
