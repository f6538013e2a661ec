"""What the suite's run could not reach (FINDINGS.md): TorchRL's scheme driven through the adapter, with module
targets (the kind TorchRL's own workers have), one numbered line per observation.

    python interop/torchrl_scheme/direct_checks.py        # about 30 s; needs torchrl
"""
import multiprocessing as mp
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

N = 1 << 22  # 16 MiB of float32

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(N))

def worker(ctrl):
    os.environ["WEIGHT_SYNC_TIMEOUT"] = "5"  # TorchRL reads it at import: a restart gives up in 5 s, not 60
    import torchrl_scheme_binding as ws
    h = ctrl.recv()
    m = Net()
    given = m.w
    rx = ws.Receiver(h, m)
    try:
        ctrl.send(("connected", rx.connect(30)))
    except Exception as e:
        ctrl.send(("connect raised", f"{type(e).__name__}: {e}")); return
    while True:
        cmd = ctrl.recv()
        if cmd == "look":
            with rx.reading():
                w = rx.weights["w"].detach()
                ctrl.send((rx.version, rx.stopped, float(w.min()), float(w.max())))
        elif cmd == "torn":
            seen, t0 = 0, time.monotonic()
            while time.monotonic() - t0 < 4:
                with rx.reading():
                    w = m.w.detach()
                    lo, hi = float(w[0]), float(w[-1])
                if lo != hi:
                    seen += 1
            ctrl.send(seen)
        elif cmd == "given":
            ctrl.send((m.w is given, m.w.data_ptr() == given.data_ptr()))
        elif cmd == "close":
            rx.close(); ctrl.send("closed"); return

def start(ctx, h):
    a, b = ctx.Pipe()
    p = ctx.Process(target=worker, args=(b,), daemon=True); p.start()
    a.send(h)
    return p, a

def ask(a, cmd):
    a.send(cmd); return a.recv()

if __name__ == "__main__":
    import torchrl_scheme_binding as ws
    ctx = mp.get_context("spawn")
    trainer = Net()
    s = ws.Sender(trainer, 3)
    w = [start(ctx, s.handle(i)) for i in range(2)]
    s.connect(10)
    print("1 connect:", [a.recv() for _, a in w])
    print("2 API-3 after connect, worker 0's module holds the Parameter it was given (same object, same storage):",
          ask(w[0][1], "given"))
    v = s.send({"w": torch.full((N,), 1.0)}, timeout=10)
    print("3 CONS-4 after send of other weights, the trainer's own parameter holds", float(trainer.w[0].detach()))
    with torch.no_grad():
        trainer.w.fill_(5.0)
    time.sleep(0.5)
    print("4 CONS-1/CONS-5 trainer updates its own parameter in place, no send; workers see:", [ask(a, "look") for _, a in w])
    v = s.send({"w": torch.full((N,), 7.0)}, workers=[0], timeout=10)
    print("5 CONS-5 send to [0] only; worker 1 (version, stopped, min, max):", ask(w[1][1], "look"))
    w[0][1].send("torn")
    t0 = time.monotonic(); k = 0
    while time.monotonic() - t0 < 3.5:
        s.send({"w": torch.full((N,), float(10 + k % 2))}, workers=[1], timeout=10); k += 1
    print(f"6 CONS-1 worker 0 read inside reading() during {k} sends to worker 1: first != last element in", w[0][1].recv(), "reads")
    late = start(ctx, s.handle(2))
    print("7 LIFE-1 late joiner at sender version", s.version, "connects with:", late[1].recv(), "and holds", ask(late[1], "look"))
    w[1][0].kill(); w[1][0].join()
    t0 = time.monotonic(); v = s.send(timeout=3)
    print(f"8 SEND-3 worker 1 killed: send(timeout=3) returned {v} after {time.monotonic() - t0:.2f} s, no error")
    again = start(ctx, s.handle(1))
    print("9 LIFE-2 restart of worker 1 with handle(1):", again[1].recv())
    print("10 SM-R-3 close receiver 0 ->", ask(w[0][1], "close"))
    t0 = time.monotonic(); v = s.send(workers=[2], timeout=3)
    print(f"   then send to worker 2 only: returned {v} after {time.monotonic() - t0:.2f} s; worker 2 shows",
          ask(late[1], "look"))
    s.close()
