"""A TCP worker (its own process) is frozen with SIGSTOP once live: the send to it must raise ReceiverDiedError with
cause "died" once its 1 s lease expires (NET-4), and so must the next send (it is gone), not SyncTimeoutError."""
import time

import torch
from _confirm import bug, fine, module
from _t_frozen import freeze, kill, start

if __name__ == "__main__":
    ws = module()
    s = ws.Sender({"w": torch.zeros(64)}, 1, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2)
    p, ready = start(ws.__name__, s.url(0))
    errs = []
    try:
        s.connect(timeout=60)
        ready.wait(30)
        freeze(p)
        t0 = time.monotonic()
        for _ in range(2):
            try:
                s.send(timeout=8)
                errs.append(None)
            except Exception as e:  # noqa: BLE001
                errs.append(e)
        el = time.monotonic() - t0
    finally:
        kill(p)
        s.close()
    for n, e in enumerate(errs):
        if not isinstance(e, ws.ReceiverDiedError) or getattr(e, "causes", {}).get(0) != "died":
            bug(f"send {n + 1} to a frozen TCP worker (lease 1 s) raised {type(e).__name__} "
                f"causes={getattr(e, 'causes', None)} after {el:.1f}s: {e}"[:400])
    fine(f"both sends raised ReceiverDiedError (died) within {el:.1f}s")
