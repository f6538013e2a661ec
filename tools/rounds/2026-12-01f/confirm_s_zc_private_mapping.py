"""A zero-copy pull worker (a spawned process) writes one element of its weights, as a buggy in-place op would.
SEC-6/ZC-3: the write faults in the worker (it dies of SIGSEGV; the trainer sees it gone). If the write is let
through, the worker then applies versions 1 and 2 (2 lands in the slot it wrote, max_slots=2) and reports what it
reads: ACK-3 wants version 2's bytes, 2.0 everywhere."""
import multiprocessing as mp
import sys


def worker(name, handle, q):
    import importlib

    import torch
    ws = importlib.import_module(name)
    r = ws.Receiver(handle, mode="pull", zero_copy=True)
    r.connect(timeout=20)
    w = r.weights["w"]
    q.send(("about to write", None))
    w[0] = 123.0  # page 0 of slot 0
    q.send(("wrote", float(w[0])))
    while r.version != 2:
        r.poll(timeout=1)
    got = r.weights["w"]
    q.send(("v2", (float(got[0]), float(got[-1]), bool(torch.all(got == 2.0)))))
    r.close()


if __name__ == "__main__":
    import torch
    from _confirm import bug, fine, module

    ws = module()
    name = sys.argv[1] if len(sys.argv) > 1 else "weightsync"
    w = {"w": torch.zeros(4096)}  # 16 KiB: four pages
    s = ws.Sender(w, 1, max_slots=2)
    ctx = mp.get_context("spawn")
    q, child_end = ctx.Pipe(duplex=False)  # a pipe's send is written at once: nothing lost when the child faults
    p = ctx.Process(target=worker, args=(name, s.handle(0), child_end), daemon=True)
    p.start()
    s.connect(timeout=25)
    child_end.close()

    def get(t):
        if not q.poll(t):
            return None
        try:
            return q.recv()
        except EOFError:
            return None
    try:
        first_msg = get(20)
        if first_msg is None or first_msg[0] != "about to write":
            raise SystemExit(f"the worker did not come to its write: {first_msg!r}")
        got = get(5)
        if got is None:
            p.join(5)
            code = p.exitcode
            s.close()
            if code is not None and code < 0:
                fine(f"the write into zero-copy weights faulted: the worker died of signal {-code}")
            bug(f"the worker neither wrote nor died (exit code {code})")
        what, val = got
        for k in (1, 2):
            w["w"].fill_(float(k))
            s.send(timeout=20)
        what, (first, last, all2) = get(20)
    finally:
        p.join(5)
        if p.is_alive():
            p.kill()
    s.close()
    if all2:
        bug(f"the write into zero-copy weights succeeded (read back {val}) instead of faulting")
    bug(f"the write into zero-copy weights succeeded (read back {val}); after version 2 (acked ok) the worker "
        f"reads w[0] = {first} (published 2.0), w[-1] = {last}")
