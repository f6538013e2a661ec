"""A spawned worker connects with its handle, then closes its receiver and stays alive (holding its Process args).
LIFE-5/CON-1: the close ends its channel, so the trainer's next send to it raises ReceiverDiedError at once, not
SyncTimeoutError after its timeout."""
import importlib
import multiprocessing as mp
import sys
import time


def worker(name, handle, closed, done):
    ws = importlib.import_module(name)
    r = ws.Receiver(handle, mode="pull")
    r.connect(timeout=60)
    r.close()
    closed.set()
    done.wait(30)  # the worker goes on with other work; `handle` is still its argument


if __name__ == "__main__":
    import torch
    from _confirm import bug, fine, module

    ws = module()
    ctx = mp.get_context("spawn")
    s = ws.Sender({"w": torch.zeros(4)}, 1, ctx=ctx)
    closed, done = ctx.Event(), ctx.Event()
    p = ctx.Process(target=worker, args=(sys.argv[1], s.handle(0), closed, done), daemon=True)
    p.start()
    try:
        s.connect(timeout=60)
        if not closed.wait(30):
            raise SystemExit("the worker did not close its receiver")
        time.sleep(0.3)
        t0 = time.monotonic()
        try:
            s.send(timeout=5)
            err = None
        except ws.WeightSyncError as e:
            err = e
        took = time.monotonic() - t0
    finally:
        done.set()
        s.close()
        p.join(10)
        if p.is_alive():
            p.kill()
    if isinstance(err, ws.ReceiverDiedError) and err.workers == [0]:
        fine(f"the send saw the closed receiver gone after {took:.1f} s")
    bug(f"after the worker closed its receiver (process alive), a send raised {type(err).__name__} after "
        f"{took:.1f} s: its channel is still open ({err})"[:400])
