"""A bf16 worker (cast slots, LAYOUT-3) is dropped, the trainer goes on sending to its fp32 worker, then the bf16
worker is restarted with a new handle (LIFE-2): it must start from the latest version's values, cast."""
import _confirm
import i_helpers as H
import torch

ws = _confirm.module()
w0 = H.weights(0)
live = {k: v.clone() for k, v in w0.items()}
with ws.Sender(live, 2, dtypes=[None, torch.bfloat16]) as sender:
    r0 = ws.Receiver(sender.handle(0), H.zeros_like(w0))
    r1 = ws.Receiver(sender.handle(1), H.zeros_like(w0, torch.bfloat16))
    _confirm.connect_inproc(sender, [r0, r1], timeout=20)
    sender.drop(1)  # the bf16 worker is cut off (it hung, say)
    for seed in (1, 2, 3):
        for k, v in H.weights(seed).items():
            live[k].copy_(v)
        v = sender.send(workers=[0], timeout=10)
    assert v == 3 and H.same(dict(r0.weights), H.weights(3)), "the fp32 worker did not get version 3"
    r1.close()
    r1b = ws.Receiver(sender.handle(1), H.zeros_like(w0, torch.bfloat16))
    _confirm.connect_inproc(sender, [r1b], workers=[1], timeout=20)
    got, want = dict(r1b.weights), H.cast(H.weights(3), torch.bfloat16)
    print("restarted bf16 worker: version", r1b.version, "w[0,:3]", got["w"][0, :3].tolist(),
          "want", want["w"][0, :3].tolist())
    if r1b.version != 3:
        _confirm.bug(f"the restarted worker reports version {r1b.version}, the latest is 3 (LIFE-2)")
    if not H.same(got, want):
        old = [s for s in (0, 1, 2) if H.same(got, H.cast(H.weights(s), torch.bfloat16))]
        _confirm.bug(f"the restarted bf16 worker reports version 3 but holds the values of version(s) {old} "
                     "(LIFE-2, INIT-4, ACK-3)")
    r0.close()
    r1b.close()
_confirm.fine("the restarted bf16 worker holds version 3, cast")
