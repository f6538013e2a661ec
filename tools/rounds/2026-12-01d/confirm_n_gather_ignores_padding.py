"""300 biases of 10 float32 each (40 bytes, padded to 64): the receiver's acked weights must equal
what was sent, for version 0 and for a later send (ACK-3, LAYOUT-1)."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
torch.manual_seed(0)
w = {f"expert{i}.bias": torch.randn(10) for i in range(300)}
with ws.Sender(w, 1) as sender:
    r = ws.Receiver(sender.handle(0), mode="pull")
    connect_inproc(sender, [r], timeout=20)
    try:
        bad0 = [k for k, v in r.weights.items() if not torch.equal(v, w[k])]
        w2 = {k: v + 1.0 for k, v in w.items()}
        f = sender.send_async(w2, timeout=10)
        got = r.poll(10)
        f.wait(10)
        bad1 = [k for k, v in r.weights.items() if not torch.equal(v, w2[k])]
    finally:
        r.close()
if bad0 or bad1:
    bug(f"acked weights differ from those sent: version 0 {len(bad0)} of 300 arrays (first {bad0[:2]}), "
        f"version {got} {len(bad1)} of 300")
fine("every array arrived intact")
