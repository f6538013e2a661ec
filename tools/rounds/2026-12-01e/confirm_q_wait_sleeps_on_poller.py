"""A training thread waits in send(timeout=None) for a silent receiver (it polls the channels); a monitoring
thread's future.wait(1) for an earlier version must raise SyncTimeoutError within its timeout (API-7)."""
import time

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0), timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise out["error"]
f1 = s.send_async()                      # version 1: the receiver reads it and never answers
trainer, tt = in_thread(s.send, None, timeout=None)   # version 2, waits without bound: it polls
time.sleep(0.7)
t0 = time.monotonic()
mon, mt = in_thread(f1.wait, 1.0)
mt.join(6)
el = time.monotonic() - t0
if mt.is_alive():
    s.close()
    bug(f"future.wait(1) beside a send(timeout=None) had not returned after {el:.1f}s")
if not isinstance(mon.get("error"), ws.SyncTimeoutError):
    bug(f"future.wait(1) gave {mon!r} instead of SyncTimeoutError")
if el > 4.0:
    bug(f"future.wait(1) raised only after {el:.1f}s")
s.close()
tt.join(10)
if not isinstance(trainer.get("error"), ws.ClosedError):
    bug(f"the waiting send gave {trainer!r} after close(), not ClosedError")
fine(f"future.wait(1) raised SyncTimeoutError after {el:.1f}s while another thread polled")
