"""An fp32 trainer (no dtypes=) and a copying worker whose model is bf16: the worker's connect() must refuse the
Init with WeightsMismatchError and the trainer's connect() raise ReceiverError (INIT-3, LAYOUT-3)."""
import torch
from _confirm import bug, fine, in_thread, module

ws = module()
torch.manual_seed(0)
trainer = torch.nn.Linear(8, 8)
s = ws.Sender(trainer, 1)
worker = torch.nn.Linear(8, 8).bfloat16()
r = ws.Receiver(s.handle(0), worker)
out, t = in_thread(r.connect, 10)
err = None
try:
    s.connect(timeout=10)
except ws.WeightSyncError as e:
    err = e
t.join(15)
s.close()
r.close()
if err is None and "error" not in out:
    bug(f"a bf16 worker behind an fp32 trainer without dtypes= connected at version {out.get('result')}: its "
        f"weights are the trainer's rounded (equal bytes: {torch.equal(worker.weight.float(), trainer.weight.detach())}),"
        " not refused (INIT-3, LAYOUT-3)")
if not isinstance(out.get("error"), ws.WeightsMismatchError) or not isinstance(err, ws.ReceiverError):
    bug(f"refused, but with worker {type(out.get('error')).__name__}, trainer {type(err).__name__}")
fine("a worker of another floating dtype is refused at connect")
