"""What a worker's first seconds cost: importing weightsync beside torch, and connecting N spawned workers.

Each import is timed in a fresh interpreter (`-X importtime` would time modules, not the
whole statement), a few times, keeping the fastest: the rest is the machine's noise. The
connect time is from starting N spawned workers, each of which imports torch and
weightsync, to the trainer's connect() returning: what a user waits for at start-up.
"""

from __future__ import annotations

import subprocess
import sys
import time

import torch
import torch.multiprocessing as mp

IMPORTS = {"torch": "import torch", "torch, weightsync": "import torch, weightsync"}


def _import_seconds(statement: str, tries: int) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                                    check=True).stdout) for _ in range(tries))


def _worker(handle, done) -> None:
    import weightsync

    with weightsync.Receiver(handle) as r:
        r.connect(300)
        done.wait(300)  # leaving earlier would fail the trainer's connect() for the others


def _connect_seconds(n: int) -> float:
    import weightsync

    ctx = mp.get_context("spawn")
    done = ctx.Event()
    sender = weightsync.Sender({"w": torch.zeros(1024)}, n, ctx=ctx)
    try:
        t0 = time.perf_counter()
        procs = [ctx.Process(target=_worker, args=(sender.handle(i), done), daemon=True) for i in range(n)]
        for p in procs:
            p.start()
        sender.connect(timeout=300)
        elapsed = time.perf_counter() - t0
    finally:
        sender.close()  # before the workers leave (Stop, LIFE-4): a worker that left first would be a receiver gone
        done.set()
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()
    return elapsed


def measure(workers: list[int], tries: int = 3) -> dict:
    """{"import_s": {statement: seconds}, "import_added_s": seconds, "connect_s": {N: seconds}}."""
    imports = {name: round(_import_seconds(stmt, tries), 3) for name, stmt in IMPORTS.items()}
    connect = {n: round(_connect_seconds(n), 2) for n in workers}
    return {"import_s": imports, "import_added_s": round(imports["torch, weightsync"] - imports["torch"], 3),
            "connect_s": connect}


def markdown(startup: dict) -> list[str]:
    imp = startup["import_s"]
    lines = ["### Start-up", "",
             f"`import torch` {imp['torch']:.2f} s; `import torch, weightsync` {imp['torch, weightsync']:.2f} s "
             f"(weightsync adds {startup['import_added_s']:.2f} s; fastest of a few fresh interpreters).", "",
             "| workers | spawn, import and connect (s) |", "|---:|---:|"]
    lines += [f"| {n} | {s:.2f} |" for n, s in startup["connect_s"].items()]
    return lines
