"""A pull receiver with a mapping target and on_apply connects (on_apply(0)); its worker then replaces the target's
tensor with one of another shape, so applying version 1 fails (ACK-7): poll() raises ReceiverError, and on_apply
must not have been called with 1 (API-11: only versions applied and answered ok)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
calls = []
target = {"w": torch.zeros(8)}
s = ws.Sender({"w": torch.ones(8)}, 1)
r = ws.Receiver(s.handle(0), target, mode="pull", on_apply=calls.append)
connect_inproc(s, [r], timeout=20)
target["w"] = torch.zeros(9)
f = s.send_async(timeout=10)
err = None
try:
    r.poll(timeout=10)
except ws.ReceiverError as e:
    err = e
for x in (s, r):
    x.close()
if err is None:
    raise SystemExit("poll() did not raise ReceiverError: no verdict")
if 1 in calls:
    bug(f"on_apply was called with {calls} although applying version 1 failed (Ack(error) sent) (API-11)")
fine(f"on_apply was called with {calls}; version 1 failed: {err.details}")
