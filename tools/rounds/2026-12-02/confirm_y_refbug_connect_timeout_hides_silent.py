"""Reference bug: when `sender.connect(timeout=t)` has seen one receiver refuse (Ready(error)) and its timeout passes
inside SEND-7's 1 s collection window while another receiver has still not answered, the error names the refusal
alone: the silent receiver, at fault with cause "timeout" (it had not answered when the call's timeout passed), is
left out, and the error is no SyncTimeoutError. connecting.connect raises `receivers_error` over the failed
receivers only once `deadline.expired()`, where the send path (future._error(timed_out=True)) adds the silent ones.
Breaks SEND-7 ("An error that a send, `wait` or `connect` raises about receivers MUST name every receiver at fault
that is known when it is raised, each with its reason and its cause: ... `timeout` (it had not answered when the
call's timeout passed)") and INIT-5 ("raises SyncTimeoutError naming the receivers that did not answer").
Two scripted receivers: 0 answers Init with Ready(error) at once, 1 reads its Init and stays silent; connect(0.4).
Exit 1 (BUG SEEN) when the error does not name receiver 1 with cause timeout."""
import threading

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
p0, p1 = Peer(s.handle(0), timeout=10), Peer(s.handle(1), timeout=10)


def refuse():
    init = p0.read()
    p0.send(p0.ready_msg(init, status="error", version=None, detail="target does not match (test)"))


def silent():
    p1.read()


for fn in (refuse, silent):
    threading.Thread(target=fn, daemon=True).start()
out, t = in_thread(s.connect, 0.4)
t.join(10)
s.close()
p0.close()
p1.close()
err = out.get("error")
if not isinstance(err, ws.ReceiverError):
    raise SystemExit(f"unexpected: {out!r}")
if err.workers == [0, 1] and err.causes.get(1) == "timeout" and isinstance(err, ws.SyncTimeoutError):
    fine(f"connect(0.4) raised naming {err.workers} {err.causes}")
bug(f"connect(timeout=0.4) raised {type(err).__name__} naming {err.workers} {err.causes}: receiver 1, silent at the "
    "timeout, is not named")
