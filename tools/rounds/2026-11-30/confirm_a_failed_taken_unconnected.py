"""SEND-4: a send that targets a receiver that failed its handshake (its target did not match the
manifest: Ready(error)) raises ReceiverError naming it, cause error, .version None; not LocalProtocolError."""
import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0), {"w": torch.zeros(4)})
r1 = ws.Receiver(s.handle(1), {"w": torch.zeros(5)})  # refuses the Init (INIT-3)
outs = [_confirm.in_thread(r.connect, 20) for r in (r0, r1)]
try:
    s.connect(timeout=20)
    _confirm.bug("setup: connect() accepted a mismatched target")
except ws.ReceiverError as e:
    if e.workers != [1]:
        _confirm.bug(f"setup: connect named {e.workers}")
for _out, t in outs:
    t.join(20)
try:
    v = s.send(workers=[0, 1], timeout=5)
    _confirm.bug(f"send to a failed receiver returned {v}")
except ws.ReceiverError as e:
    if e.workers != [1] or e.version is not None or e.causes.get(1) != "error":
        _confirm.bug(f"wrong error: workers={e.workers} version={e.version} causes={e.causes}")
    if s.version != 0:
        _confirm.bug(f"a version was consumed: {s.version}")
    _confirm.fine(f"the failed receiver is named: {e.causes}")
except ws.LocalProtocolError as e:
    _confirm.bug(f"a failed receiver is reported as not connected: {e}")
