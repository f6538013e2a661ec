"""After a Ctrl-C inside send() (a KeyboardInterrupt while it waits for acks), the sender must go on working:
a later send to a receiver that acks returns its version (SEND-1) and done() turns true (API-2, LIFE-9)."""
import os
import signal
import threading
import time

import _confirm
import torch

ws = _confirm.module()
sender = ws.Sender({"w": torch.arange(4, dtype=torch.float32)}, 1)
r = ws.Receiver(sender.handle(0), mode="pull")
_confirm.connect_inproc(sender, [r])

# Version 1: the receiver does not poll yet, so send() waits for its ack; Ctrl-C arrives 0.5 s in.
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    sender.send(timeout=8)
    _confirm.bug("send() returned although its receiver never polled")  # not the bug looked for; should not happen
except KeyboardInterrupt:
    pass

stop = threading.Event()


def worker():
    while not stop.is_set():
        try:
            r.poll(timeout=0.1)
        except Exception:  # noqa: BLE001
            return


threading.Thread(target=worker, daemon=True).start()
t0 = time.monotonic()
try:
    v = sender.send(timeout=4)
except ws.SyncTimeoutError as e:
    _confirm.bug(f"after one Ctrl-C, send() to a polling receiver timed out after {time.monotonic() - t0:.1f} s: "
                 f"{str(e)[:100]}")
fut = sender.send_async(timeout=4)
ok = False
end = time.monotonic() + 5
while time.monotonic() < end:
    if fut.done():
        ok = True
        break
    time.sleep(0.05)
stop.set()
if not ok:
    _confirm.bug("after one Ctrl-C, future.done() never turned true though the receiver acked")
_confirm.fine(f"after the Ctrl-C, send() returned {v} and done() turned true")
