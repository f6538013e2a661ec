import _confirm
import torch

ws = _confirm.module()

sender = ws.Sender({"w": torch.zeros(4), "b": torch.zeros(2)}, 1)
target = {"w": torch.full((4,), -1.0), "b": torch.full((2,), -1.0)}
r = ws.Receiver(sender.handle(0), target, mode="pull")
_confirm.connect_inproc(sender, [r])
target["w"] = torch.zeros(5)  # the caller breaks its target: the next apply fails (ACK-7)
fut = sender.send_async({"w": torch.ones(4), "b": torch.ones(2)})
try:
    got = r.poll(timeout=5)
    _confirm.fine(f"(setup) poll() did not fail: {got}")
except ws.ReceiverError:
    pass
stopped_after_error = r.stopped
target["w"] = torch.zeros(4)  # repaired
fut2 = sender.send_async({"w": torch.full((4,), 2.0), "b": torch.full((2,), 2.0)})
got2 = r.poll(timeout=3)
try:
    v2 = fut2.wait(3)
except ws.WeightSyncError as e:
    v2 = type(e).__name__
sender.close(); r.close()
if stopped_after_error or got2 != 2:
    _confirm.bug(f"after an Ack(error) stopped={stopped_after_error}; the next poll() gave {got2}, send {v2}")
_confirm.fine(f"stopped stayed false after the failed apply; the next version {got2} repaired it")
