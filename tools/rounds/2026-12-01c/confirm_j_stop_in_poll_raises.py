"""The trainer closes while a pull worker's poll(timeout) waits: poll() must return None, stopped turn true."""
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
w = {"w": torch.zeros(4)}
s = ws.Sender(w, 1)
rx = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [rx])
out, t = in_thread(rx.poll, 8.0)
time.sleep(0.7)  # the poll is waiting for a version
s.close()
t.join(15)
if t.is_alive():
    bug("poll() still waiting 15 s after the sender closed")
stopped = rx.stopped
rx.close()
if "error" in out:
    bug(f"poll() raised {type(out['error']).__name__} when the sender's Stop came during it: {out['error']}")
if out.get("result") is not None:
    bug(f"poll() returned {out['result']} after Stop")
if not stopped:
    bug("receiver.stopped is false after Stop")
fine("poll() returned None and stopped is true")
