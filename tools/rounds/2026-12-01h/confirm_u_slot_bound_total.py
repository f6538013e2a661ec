"""Two pull receivers that do not poll; receiver 1 asked for bf16 slots (dtypes=[None, bf16]): two slot groups of
two slots each, default max_slots N+2 = 4 per group (SLOT-3). Versions 1 and 2 pin both slots of each group, so
version 3 needs a third slot in each group: it must be allocated, not waited for."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(16), "step": torch.zeros((), dtype=torch.int64)}, 2,
              dtypes=[None, torch.bfloat16])
rs = [ws.Receiver(s.handle(i), mode="pull") for i in range(2)]
connect_inproc(s, rs, timeout=20)
futures = [s.send_async({"w": torch.full((16,), float(v)), "step": torch.tensor(v)}, timeout=2) for v in (1, 2)]
err = None
try:
    f3 = s.send_async({"w": torch.full((16,), 3.0), "step": torch.tensor(3)}, timeout=2)
except ws.SyncTimeoutError as e:
    err = e
ver = s.version
for x in (s, *rs):
    x.close()
if err is not None:
    bug(f"the third send_async raised SyncTimeoutError ({str(err)[:120]}) with each slot group holding 2 slots "
        f"under its bound of 4 (SLOT-3: counted per slot device, not in total); sender.version stays {ver}")
fine(f"version {f3.version} published into a third slot of each group")
