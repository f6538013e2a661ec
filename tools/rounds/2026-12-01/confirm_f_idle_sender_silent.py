"""A TCP receiver (lease 2 s, sender heartbeat 0.5 s) while the trainer makes no call for 5 s: the sender must
keep heartbeating (NET-4), so the receiver stays live and the next send is acked."""
import time

import _confirm
import torch

if __name__ == "__main__":
    ws = _confirm.module()
    sender = ws.Sender({"w": torch.arange(8, dtype=torch.float32)}, 1, listen="tcp://127.0.0.1:0",
                       lease=2.0, heartbeat=0.5)
    r = ws.Receiver(sender.url(0))
    _confirm.connect_inproc(sender, [r], timeout=30)
    assert sender.send({"w": torch.ones(8)}, timeout=15) == 1
    time.sleep(5.0)  # the trainer is busy elsewhere: no call on the sender
    if r.stopped:
        _confirm.bug(f"the TCP receiver stopped while the trainer made no call for 5 s (lease 2 s): "
                     f"{r.failure!r:.200}")
    try:
        v = sender.send({"w": torch.ones(8) * 2}, timeout=15)
    except Exception as e:  # noqa: BLE001
        _confirm.bug(f"the send after the pause raised {type(e).__name__}: {e!s:.200}")
    _confirm.fine(f"receiver live after the pause; version {v} acked")
