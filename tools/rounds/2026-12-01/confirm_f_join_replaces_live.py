"""A second process joining with a live receiver's URL must be refused (RDV-5); the live one must stay live."""
import os
import time

import _confirm
import torch

if __name__ == "__main__":
    ws = _confirm.module()
    w = {"w": torch.arange(8, dtype=torch.float32)}
    sender = ws.Sender(w, 1, listen=f"unix:@f-jrl-{os.getpid()}-{time.monotonic_ns()}")
    first = ws.Receiver(sender.url(0))
    _confirm.connect_inproc(sender, [first], timeout=20)
    assert sender.send({"w": torch.ones(8)}, timeout=10) == 1
    second = ws.Receiver(sender.url(0))
    out, t = _confirm.in_thread(second.connect, 8)
    t.join(12)
    if t.is_alive():
        _confirm.bug("the second join neither connected nor was refused within 12 s")
    err = out.get("error")
    time.sleep(0.5)
    if err is None:
        _confirm.bug(f"a second Receiver with live receiver 0's URL was welcomed and connected at version "
                     f"{out.get('result')}; the first one is now stopped={first.stopped}")
    if not isinstance(err, ws.RefusedError):
        _confirm.bug(f"the second join raised {type(err).__name__}: {err}, not RefusedError")
    try:
        v = sender.send({"w": torch.ones(8) * 2}, timeout=10)
    except Exception as e:  # noqa: BLE001
        _confirm.bug(f"after the refused join the live receiver 0 failed: {type(e).__name__}: {e}")
    if first.stopped:
        _confirm.bug("the live receiver stopped after a refused join")
    _confirm.fine(f"second join refused ({str(err)[:80]}); receiver 0 still live, acked version {v}")
