"""A trainer written as a user would, with nothing but the public binding.

Three spawned workers (push, push, pull) and one whose model does not match;
20 sends with changing weights, subset sends, bad weights, a SIGKILLed worker,
a double close. Prints one line per check and exits non-zero on the first
failure. Run: python tests/client_example.py
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import threading
import time

import torch
import torch.multiprocessing as mp
from torch import nn

import weightsync as ws


def net(hidden: int = 16) -> nn.Module:
    return nn.Sequential(nn.Linear(4, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, 2))


def digest(state) -> str:
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode() + state[name].detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def worker(handle, mode: str, hidden: int, ctl) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    model = net(hidden)
    try:
        with ws.Receiver(handle, model, mode=mode) as r:
            r.connect(timeout=60)
            while not r.stopped:
                if mode == "pull":
                    r.poll(timeout=0.005)
                if ctl.poll(0.005):
                    ctl.recv()
                    with r.reading():
                        ctl.send((r.version, digest(model.state_dict())))
    except ws.WeightsMismatchError as e:
        ctl.send(("mismatch", str(e)))
    ctl.close()


def check(cond: bool, what: str) -> None:
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        sys.exit(1)


def main() -> int:
    ctx = mp.get_context("spawn")
    shm_before = set(os.listdir("/dev/shm"))
    torch.manual_seed(0)
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sender = ws.Sender(model, 4, ctx=ctx)
    modes, hiddens = ["push", "push", "pull", "push"], [16, 16, 16, 12]  # worker 3 does not match
    ctls, procs = [], []
    for i in range(4):
        ours, theirs = ctx.Pipe()
        procs.append(ctx.Process(target=worker, args=(sender.handle(i), modes[i], hiddens[i], theirs)))
        procs[-1].start()
        theirs.close()
        ctls.append(ours)

    try:
        sender.connect(timeout=120)
        check(False, "connect must fail for the mismatched worker")
    except ws.ReceiverError as e:
        check(e.workers == [3], f"connect names the mismatched worker: {e.workers}")
    sender.connect(timeout=120)  # the others finish their handshake
    check(ctls[3].poll(30) and ctls[3].recv()[0] == "mismatch", "the mismatched worker got WeightsMismatchError")
    live = [0, 1, 2]

    published = {0: digest(model.state_dict())}
    acked = {i: 0 for i in live}

    def verify(label: str) -> None:
        for i in live:
            ctls[i].send("state")
            if not ctls[i].poll(30):
                check(False, f"{label}: worker {i} did not answer within 30 s")
            version, d = ctls[i].recv()
            if version != acked[i] or d != published[version]:
                check(False, f"{label}: worker {i} holds {version}, acked {acked[i]}, bytes match: {d == published.get(version)}")
        print(f"ok   {label}: every worker holds exactly the version it acked", flush=True)

    for step in range(1, 21):
        loss = model(torch.randn(32, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        targets = [0, 2] if step % 5 == 0 else live
        version = sender.send(workers=targets, timeout=30)
        published[version] = digest(model.state_dict())
        for i in targets:
            acked[i] = version
        verify(f"send {step} (version {version}, workers {targets})")

    before = sender.version
    bad = {k: v.detach().clone() for k, v in model.state_dict().items()}
    bad["0.weight"] = torch.zeros(3, 3)
    try:
        sender.send(bad, timeout=30)
        check(False, "bad weights must be rejected")
    except ws.WeightsMismatchError:
        check(sender.version == before, "bad weights: rejected, no version consumed")
    verify("after bad weights")

    os.kill(procs[1].pid, signal.SIGKILL)
    procs[1].join(10)
    result = {}
    t = threading.Thread(target=lambda: result.update(error=_catch(lambda: sender.send(timeout=None))))
    t0 = time.monotonic()
    t.start()
    t.join(30)
    err = result.get("error")
    # Worker 3 failed its handshake and is a target too: the one error names both, each with its cause (SEND-7).
    check(isinstance(err, ws.ReceiverDiedError) and err.workers == [1, 3] and err.causes[1] == "died"
          and err.causes[3] == "error", f"SIGKILLed worker named within {time.monotonic() - t0:.2f} s: {err!r}")
    live.remove(1)
    if err.version is not None:  # the others got it; else nothing was published (SEND-4)
        for i in live:
            acked[i] = err.version
        published[err.version] = digest(model.state_dict())
    verify("after the SIGKILL")
    version = sender.send(workers=live, timeout=30)
    published[version] = digest(model.state_dict())
    acked.update({i: version for i in live})
    verify("a send to the survivors")

    sender.close()
    sender.close()
    for p in procs:
        p.join(30)
    check(all(not p.is_alive() for p in procs), "every worker exited after close")
    check([p.exitcode for i, p in enumerate(procs) if i != 1] == [0, 0, 0], "workers exited 0")
    check(mp.active_children() == [], "no child process left")
    check(threading.active_count() == 1, f"no thread left: {threading.enumerate()}")
    deadline = time.monotonic() + 30  # another program's entries come and go; a leaked one stays
    while (left := set(os.listdir("/dev/shm")) - shm_before) and time.monotonic() < deadline:
        time.sleep(0.5)
    check(not left, f"no /dev/shm entry left {sorted(left)}")
    print("client: all checks passed")
    return 0


def _catch(fn):
    try:
        fn()
    except ws.WeightSyncError as e:
        return e
    return None


if __name__ == "__main__":
    sys.exit(main())
