"""A worker got its handle and exited without connecting: connect() sees it gone (CON-1, INIT-5), not a timeout."""
import multiprocessing as mp
import time

import torch
from _confirm import bug, fine, module


def worker(handle):
    pass  # exits at once: a worker that crashed on start-up


if __name__ == "__main__":
    ws = module()
    ctx = mp.get_context("spawn")
    s = ws.Sender({"w": torch.zeros(4)}, 1, ctx=ctx)
    handles = [s.handle(0)]  # the trainer keeps its handles
    p = ctx.Process(target=worker, args=(handles[0],))
    p.start()
    p.join(60)
    t0 = time.monotonic()
    try:
        s.connect(timeout=15)
        bug("connect() returned")
    except ws.ReceiverDiedError:
        fine(f"ReceiverDiedError after {time.monotonic() - t0:.1f} s")
    except ws.SyncTimeoutError:
        bug(f"connect() waited out its timeout ({time.monotonic() - t0:.1f} s) for a worker that had exited")
