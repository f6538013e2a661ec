"""send_async() of version 1; the pull receiver applies it and acks (poll() returns once the Ack is written); no
sender call reads it. Then sender.close(): f.wait() must return 1 (LIFE-8: acked before close(), read or not)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=20)
f = s.send_async(weights={"w": torch.ones(4)}, timeout=5)
if r.poll(timeout=10) != 1:
    bug("the receiver did not apply version 1")
s.close()
done = f.done()
try:
    got = f.wait(0)
except ws.ClosedError as e:
    r.close()
    bug(f"version 1, acked before close(), raised ClosedError after close(): {e}")
except ws.WeightSyncError as e:
    r.close()
    bug(f"version 1, acked before close(), raised {type(e).__name__}: {e}")
r.close()
if not done:
    bug("done() was False after close()")
if got != 1:
    bug(f"wait() returned {got}")
fine("close() completes a version whose acks had arrived")
