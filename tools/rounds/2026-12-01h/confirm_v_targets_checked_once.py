"""Two receivers, max_slots=2. Pull worker 1 does not poll: versions 1 and 2 (sent to it alone) pin both slots, so a
send to [0, 1] waits for a slot. Worker 1 then exits (closes): its pins go, a slot frees, but a target of the waiting
send is now gone: SEND-4/VER-2 want ReceiverDiedError naming it with `.version` None, and sender.version still 2."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, max_slots=2)
r0 = ws.Receiver(s.handle(0))
r1 = ws.Receiver(s.handle(1), mode="pull")
connect_inproc(s, [r0, r1], timeout=15)
s.send_async({"w": torch.ones(4)}, workers=[1], timeout=5)
s.send_async({"w": torch.full((4,), 2.0)}, workers=[1], timeout=5)
threading.Timer(0.8, r1.close).start()
out, t = in_thread(s.send, {"w": torch.full((4,), 3.0)}, timeout=10)
t.join(15)
time.sleep(0.2)
ver = s.version
r0.close()
s.close()
err = out.get("error")
if not isinstance(err, ws.ReceiverDiedError):
    raise SystemExit(f"the waiting send gave {out!r}")
if err.version is not None or ver != 2:
    bug(f"the send raised {type(err).__name__} naming {err.workers} with .version {err.version}, and sender.version "
        f"is {ver}: a target gone while it waited was sent to as if it died after publication")
fine(f"the send raised ReceiverDiedError naming {err.workers}, .version None; sender.version stays {ver}")
