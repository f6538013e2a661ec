"""SEND-7: a send(timeout=0.6) where receiver 1 answers Ack(error) at once and receiver 0 (pull, never polls)
stays silent must raise one error naming both: 1 with cause error, 0 with cause timeout."""
import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 2)
tg0, tg1 = {"w": torch.zeros(4)}, {"w": torch.zeros(4)}
r0 = ws.Receiver(s.handle(0), tg0, mode="pull")
r1 = ws.Receiver(s.handle(1), tg1, mode="push")
_confirm.connect_inproc(s, [r0, r1], timeout=20)
tg1["w"] = torch.zeros(5)  # receiver 1's target no longer matches: its next apply answers Ack(error) (ACK-7)
try:
    v = s.send(timeout=0.6)
    _confirm.bug(f"send returned {v} although receiver 1 failed and receiver 0 never answered")
except ws.WeightSyncError as e:
    causes = dict(getattr(e, "causes", {}))
    if causes.get(1) != "error":
        _confirm.bug(f"receiver 1's error ack is not named: {type(e).__name__} causes={causes}")
    if causes.get(0) != "timeout" or not isinstance(e, ws.SyncTimeoutError) or 0 not in e.workers:
        _confirm.bug(f"the silent receiver 0 is not named as timed out: {type(e).__name__} workers={e.workers} "
                     f"causes={causes}")
    _confirm.fine(f"one error names both: causes={causes}")
