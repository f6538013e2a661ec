"""Worker 0 (push) acks, pull worker 1 never polls: a send to both waits. Another thread drops worker 1. API-9: the
version pending on it fails for it: the waiting send raises ReceiverDiedError naming 1 (cause died); it does not
return its version."""
import threading

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
r0 = ws.Receiver(s.handle(0))
r1 = ws.Receiver(s.handle(1), mode="pull")
connect_inproc(s, [r0, r1], timeout=15)
threading.Timer(0.8, s.drop, args=(1,), kwargs={"timeout": 5}).start()
out, t = in_thread(s.send, {"w": torch.ones(4)}, timeout=10)
t.join(15)
r0.close()
r1.close()
s.close()
err = out.get("error")
if "result" in out:
    bug(f"the send to [0, 1] returned version {out['result']} after worker 1 was dropped without acking it")
if isinstance(err, ws.ReceiverDiedError) and err.workers == [1] and err.causes.get(1) == "died":
    fine(f"the send raised ReceiverDiedError naming [1] (died): {err.details[1][:60]}")
raise SystemExit(f"unexpected: {out!r}")
