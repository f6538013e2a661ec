"""A connected pull receiver with no version pending calls poll() inside its own reading() block: CONS-3 wants
LocalProtocolError whether or not a version is pending."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=20)
err, got = None, "not called"
with r.reading(timeout=5):
    try:
        got = r.poll(0)
    except ws.WeightSyncError as e:
        err = e
r.close()
s.close()
if err is None:
    bug(f"poll() inside reading() returned {got!r} (no version pending) instead of raising LocalProtocolError "
        "(CONS-3)")
if not isinstance(err, ws.LocalProtocolError):
    raise SystemExit(f"poll() raised {type(err).__name__}: {err}; no verdict")
fine("poll() inside reading() raised LocalProtocolError")
