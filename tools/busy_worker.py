"""What a send costs when the worker's own Python is busy (docs/guides/push-pull.md, "A busy worker").

One trainer and one worker process, a policy of about 1e3 parameters, the public binding only.
The worker's main thread does one of:

    idle       sleeps between steps (the quickstart's shape)
    inference  runs the policy inside `reading()`, step after step, with no pause
    env        a step of pure Python (about a millisecond of an environment's own code) after each
               forward pass

and takes versions in one of two ways: `push` (the receiver's thread applies them) or `pull`
(the main thread calls `poll(0)` once per step). For each pair it prints the p50 of `send()`
and, for scale, a pipe round trip to an idle process measured in the same run. A push
receiver's thread needs the GIL to apply and ack; while the main thread runs Python it gets
it only when the interpreter makes that thread let go, which it does after
`sys.getswitchinterval()` (5 ms by default). `--switch S` sets the worker's interval.
Run by hand: `python tools/busy_worker.py [--sends N] [--switch S]`; it asserts nothing.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time

MODES = ("idle", "inference", "env")


def _policy():
    from torch import nn

    return nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 6))  # 1,030 parameters


def _env_step() -> int:
    x = 0
    for k in range(20_000):  # about a millisecond of Python on this machine
        x ^= k
    return x


def _worker(handle, mode: str, take: str, switch: float | None) -> None:
    import torch

    import weightsync

    torch.set_num_threads(1)
    if switch is not None:
        sys.setswitchinterval(switch)
    policy = _policy()
    obs = torch.randn(1, 8)
    with weightsync.Receiver(handle, policy, mode=take) as r:
        r.connect(timeout=120)
        while not r.stopped:
            if take == "pull":
                r.poll(0)
            if mode == "idle":
                time.sleep(0.01)
                continue
            with r.reading():
                policy(obs)
            if mode == "env":
                _env_step()


def _echo(conn) -> None:
    while conn.recv() is not None:
        conn.send(1)


def pipe_p50(ctx, sends: int) -> float:
    a, b = ctx.Pipe()
    p = ctx.Process(target=_echo, args=(b,))
    p.start()
    times = []
    for _ in range(sends):
        t = time.perf_counter()
        a.send(1)
        a.recv()
        times.append(time.perf_counter() - t)
    a.send(None)
    p.join(30)
    return statistics.median(times[sends // 5:])


def send_p50(ctx, mode: str, take: str, sends: int, switch: float | None) -> float:
    import weightsync

    policy = _policy()
    with weightsync.Sender(policy, 1, ctx=ctx) as sender:
        p = ctx.Process(target=_worker, args=(sender.handle(0), mode, take, switch))
        p.start()
        sender.connect(timeout=120)
        times = []
        for _ in range(sends):
            t = time.perf_counter()
            sender.send(timeout=60)
            times.append(time.perf_counter() - t)
    p.join(60)
    return statistics.median(times[sends // 5:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sends", type=int, default=500)
    parser.add_argument("--switch", type=float, default=None, help="the worker's sys.setswitchinterval, seconds")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    ctx = mp.get_context("spawn")
    print(f"pipe round trip to an idle process: p50 {pipe_p50(ctx, 2000) * 1e6:.0f} us")
    print(f"worker switch interval: {args.switch if args.switch is not None else sys.getswitchinterval()} s")
    print("| worker | push: send p50 | pull, poll(0) each step: send p50 |")
    print("|---|---:|---:|")
    for mode in MODES:
        push, pull = (send_p50(ctx, mode, take, args.sends, args.switch) for take in ("push", "pull"))
        print(f"| {mode} | {push * 1e6:.0f} us | {pull * 1e6:.0f} us |", flush=True)


if __name__ == "__main__":
    main()
