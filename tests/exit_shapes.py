"""Trainer and worker scripts that end right after their `with` block (issue 39: aborts at interpreter exit).

    python tests/exit_shapes.py trainer tcp|unix URLFILE   a trainer that listens, writes url(0) to URLFILE,
                                                           connects worker 0, sends 5 versions, and ends
    python tests/exit_shapes.py worker URL pull|push       a worker that joins by URL, follows until stopped, ends
    python tests/exit_shapes.py handles                    quickstart's shape: 2 spawned workers given handles
    python tests/exit_shapes.py oneprocess                 a TCP sender and a receiver by URL in one process:
                                                           one send, close both, return at once
    python tests/exit_shapes.py slowlane                   as oneprocess, with each data-plane lane's last step
                                                           stretched by 0.5 s of torch ops (the race made certain)
    python tests/exit_shapes.py torchrl                    the TorchRL guide's shape (needs torchrl)

Each script prints what it did on stdout and nothing on stderr; run by tests/test_exit_paths.py, which checks
that every run exits 0 with an empty stderr (no 'terminate called', no 'Fatal Python error', no gloo warning).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import torch
from torch import nn

import weightsync

BOUND = 120  # seconds for any connect; the runner kills a script that outlives its own bound


def policy() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 4))


def trainer(kind: str, urlfile: str) -> None:
    """The issue's trainer: one worker from another shell joins by the URL it writes to a file."""
    net = policy()
    listen = "tcp://127.0.0.1:0" if kind == "tcp" else f"unix:@weightsync-exit-{os.getpid()}-{time.time_ns()}"
    with weightsync.Sender(net, num_workers=1, listen=listen) as sender:
        tmp = urlfile + ".tmp"
        with open(tmp, "w") as f:
            f.write(sender.url(0))
        os.replace(tmp, urlfile)
        sender.connect(timeout=BOUND, workers=[0])
        for step in range(1, 6):
            with torch.no_grad():
                for p in net.parameters():
                    p.fill_(step)
            sender.send(timeout=60)
    print("trainer closed", flush=True)


def worker(url: str, mode: str) -> None:
    """A worker started apart from the trainer (another shell, another host): ends right after its block."""
    with weightsync.Receiver(url, mode=mode) as receiver:
        receiver.connect(timeout=BOUND)
        while not receiver.stopped:
            if mode == "pull":
                receiver.poll(timeout=0.5)
            else:
                time.sleep(0.01)
        print(f"worker stopped at version {receiver.version}", flush=True)


def _handle_worker(handle: weightsync.Handle) -> None:
    net = policy()
    with weightsync.Receiver(handle, net) as receiver:
        receiver.connect(timeout=BOUND)
        while not receiver.stopped:
            with receiver.reading():
                net(torch.randn(8, 16))
            time.sleep(0.01)


def handles() -> None:
    """docs/quickstart.md's shape: spawned workers given sender.handle(i)."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    net = policy()
    with weightsync.Sender(net, num_workers=2, ctx=ctx) as sender:
        procs = [ctx.Process(target=_handle_worker, args=(sender.handle(i),)) for i in range(2)]
        for p in procs:
            p.start()
        sender.connect(timeout=BOUND)
        for step in range(1, 6):
            with torch.no_grad():
                for p in net.parameters():
                    p.fill_(step)
            sender.send(timeout=60)
    for p in procs:
        p.join(timeout=60)
    print("trainer closed", flush=True)


def oneprocess() -> None:
    """A TCP sender and a receiver by URL in one process: one send, close both, return without waiting."""
    sender = weightsync.Sender({"w": torch.zeros(1000)}, 1, listen="tcp://127.0.0.1:0")
    receiver = weightsync.Receiver(sender.url(0), mode="pull")
    joined = threading.Thread(target=receiver.connect, args=(BOUND,), daemon=True)
    joined.start()
    sender.connect(timeout=BOUND)
    joined.join(BOUND)
    f = sender.send_async(timeout=60)
    deadline = time.monotonic() + 60
    while receiver.poll(timeout=0.5) is None and time.monotonic() < deadline:
        pass
    f.wait(timeout=60)
    sender.close()
    receiver.close()
    print("closed", flush=True)


def slow_lane() -> None:
    """oneprocess, with each lane thread's store ending after 0.5 s of torch ops that release the GIL (as a loaded
    machine stretches a group's teardown): a lane still running when the interpreter finalizes aborts it."""
    from weightsync import netplane

    small = torch.ones(200, 200)
    close = netplane.Store.close

    def slow_close(self):
        if threading.current_thread().name == "weightsync-lane":
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                small.mm(small)
        close(self)

    netplane.Store.close = slow_close
    oneprocess()


def torchrl_shape() -> None:
    """docs/guides/torchrl.md's example (where torchrl is installed): the script ends after shutdown()."""
    from torchrl.collectors import MultiSyncCollector

    from weightsync.torchrl import WeightsyncScheme

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torchrl_parts import make_env, make_policy  # type: ignore[import-not-found]  # importable by workers

    policy = make_policy()
    scheme = WeightsyncScheme(mode="push", timeout=30)
    collector = MultiSyncCollector([make_env] * 2, policy=policy, frames_per_batch=64, total_frames=64 * 4,
                                   weight_sync_schemes={"policy": scheme}, track_policy_version=True)
    try:
        for _ in collector:
            collector.update_policy_weights_()
    finally:
        collector.shutdown()
    print("trainer closed", flush=True)


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "trainer":
        trainer(sys.argv[2], sys.argv[3])
    elif role == "worker":
        worker(sys.argv[2], sys.argv[3])
    elif role == "handles":
        handles()
    elif role == "oneprocess":
        oneprocess()
    elif role == "slowlane":
        slow_lane()
    elif role == "torchrl":
        torchrl_shape()
    else:
        raise SystemExit(f"unknown role {role!r}")
