"""Receiver 0 connects and takes versions 1 and 2; then receiver 1 joins late and refuses its Init, and
receiver 2 never answers. INIT-5 / spec 8.4: the ReceiverError and the SyncTimeoutError that connect()
raises carry `.version` 2, the latest published version (the one in the Init)."""
import _confirm
import d_helpers

ws = _confirm.module()
sender = ws.Sender(d_helpers.weights(), 3)
p0 = d_helpers.Scripted(sender.handle(0)).start()
sender.connect(timeout=10, workers=[0])
sender.send(workers=[0], timeout=10)
v = sender.send(workers=[0], timeout=10)
p1 = d_helpers.Scripted(sender.handle(1), ready="target does not match").start()
p2 = d_helpers.Scripted(sender.handle(2), ready=None).start()  # takes Init, never answers
seen = {}
for w, cls, t in ((1, ws.ReceiverError, 10), (2, ws.SyncTimeoutError, 1.0)):
    try:
        sender.connect(timeout=t, workers=[w])
        _confirm.bug(f"connect(workers=[{w}]) returned")
    except cls as e:
        if e.workers != [w]:
            _confirm.bug(f"connect(workers=[{w}]) named {e.workers}")
        seen[type(e).__name__] = e.version
inits = {p.init["version"] for p in (p1, p2) if p.init}
if any(x != v for x in seen.values()):
    _confirm.bug(f"connect()'s errors carry .version {seen}; the Inits carried version {inits}, the latest "
                 f"published is {v}")
_confirm.fine(f"connect()'s errors carry .version {seen}")
