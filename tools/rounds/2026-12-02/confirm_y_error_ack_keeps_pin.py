"""Two receivers, max_slots=2. Pull worker 0 (a mapping target) has not polled version 1, which pins its slot; push
worker 1 acks everything. Version 2 goes to [1] in the other slot; a send of version 3 to [1] must wait for a slot.
While it waits, worker 0 polls: its target no longer matches (a tensor replaced by another shape), so it answers
Ack(error) (ACK-7). That answer frees the slot of version 1 (SLOT-2): the waiting send publishes version 3."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, max_slots=2)
target = {"w": torch.zeros(4)}
r0 = ws.Receiver(s.handle(0), target, mode="pull")
r1 = ws.Receiver(s.handle(1))
connect_inproc(s, [r0, r1], timeout=15)
f1 = s.send_async({"w": torch.full((4,), 1.0)}, timeout=5)
target["w"] = torch.zeros(5)  # worker 0's target no longer matches
s.send({"w": torch.full((4,), 2.0)}, workers=[1], timeout=5)
polled = {}


def poll_later():
    time.sleep(0.5)
    try:
        polled["result"] = r0.poll(timeout=3)
    except ws.ReceiverError as e:
        polled["error"] = e


threading.Thread(target=poll_later, daemon=True).start()
out, t = in_thread(s.send, {"w": torch.full((4,), 3.0)}, workers=[1], timeout=5)
t.join(12)
r0.close()
r1.close()
s.close()
if not isinstance(polled.get("error"), ws.ReceiverError):
    raise SystemExit(f"worker 0's apply did not fail as planned: {polled!r}")
err = out.get("error")
if isinstance(err, ws.SyncTimeoutError):
    bug(f"worker 0 answered Ack(error) for version 1, yet the send to [1] found no free slot: {type(err).__name__} "
        f"naming {err.workers}, .version {err.version}")
if "result" in out:
    fine(f"the Ack(error) freed the slot: the send to [1] returned version {out['result']}")
raise SystemExit(f"unexpected: {out!r}")
