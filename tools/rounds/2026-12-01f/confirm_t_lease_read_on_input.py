"""A TCP worker (its own process) is frozen with SIGSTOP once live; a send to it with timeout=8 must raise
ReceiverDiedError naming it ("lease expired") within the 1 s lease plus the grace (NET-4), not wait out its
timeout."""
import time

import torch
from _confirm import bug, fine, module
from _t_frozen import freeze, kill, start

if __name__ == "__main__":
    ws = module()
    s = ws.Sender({"w": torch.zeros(64)}, 1, listen="tcp://127.0.0.1:0", lease=1.0, heartbeat=0.2)
    p, ready = start(ws.__name__, s.url(0))
    try:
        s.connect(timeout=60)
        ready.wait(30)
        freeze(p)
        t0 = time.monotonic()
        err = None
        try:
            s.send(timeout=8)
        except Exception as e:  # noqa: BLE001
            err = e
        el = time.monotonic() - t0
    finally:
        kill(p)
        s.close()
    if not isinstance(err, ws.ReceiverDiedError) or el > 1.0 + 3.0 + 0.5:
        bug(f"a send to a frozen TCP worker (lease 1 s) raised {type(err).__name__} after {el:.1f}s: {err}"[:400])
    fine(f"ReceiverDiedError after {el:.1f}s: {err}"[:300])
