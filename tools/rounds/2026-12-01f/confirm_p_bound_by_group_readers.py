"""Three receivers, default max_slots (N+2 = 5 per slot group): two fp32 push workers and one bf16 pull worker
(`dtypes=[None, None, bfloat16]`, its own group) that does not poll for a while. Four sends to all: the bf16 group
needs a fourth slot for the fourth (latest and three pending at the pull worker), below the bound of 5, so no send
may wait for a slot (SLOT-3)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 3, dtypes=[None, None, torch.bfloat16])
rs = [ws.Receiver(s.handle(0)), ws.Receiver(s.handle(1)), ws.Receiver(s.handle(2), mode="pull")]
connect_inproc(s, rs, timeout=20)
fs = []
for v in (1, 2, 3, 4):
    try:
        fs.append(s.send_async({"w": torch.full((8,), float(v))}, timeout=2))
    except ws.SyncTimeoutError as e:
        bug(f"send_async of version {v} found no free slot: SyncTimeoutError naming {e.workers}, .version "
            f"{e.version}, though the bf16 group holds {v - 1} slots, below the bound of 5 (SLOT-3)")
got = rs[2].poll(10)
for f in fs:
    f.wait(10)
vals = [r.weights["w"][0].item() for r in rs]
for x in (*rs, s):
    x.close()
if got != 4 or vals != [4.0, 4.0, 4.0]:
    bug(f"the pull worker applied {got}; the receivers read {vals}")
fine("each slot group may grow to N+2 slots")
