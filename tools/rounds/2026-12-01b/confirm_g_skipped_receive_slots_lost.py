"""A pull receiver that skips Receives (ACK-2) must still apply a later version in a slot a skipped one introduced."""
import _confirm
import g_helpers as h

ws = _confirm.module()
own = {k: v.clone() for k, v in h.weights(0).items()}
sender = ws.Sender(own, 1, max_slots=4)
r0 = ws.Receiver(sender.handle(0), mode="pull")
h.connect(sender, [r0])
seed = 0
# r0 polls rarely: while it does not, the sender rotates into new slots, introduced by Receives it then skips
for batch in (4, 3, 3, 3):
    futures = []
    for _ in range(batch):
        seed += 1
        h.load(h.weights(seed), own)
        futures.append(sender.send_async(timeout=10))
    try:
        got = r0.poll(timeout=5)
    except ws.ReceiverError as e:
        _confirm.bug(f"poll() for versions {[f.version for f in futures]} raised {type(e).__name__}: {e}")
    if got != futures[-1].version or not h.same(dict(r0.weights), h.weights(seed)):
        _confirm.bug(f"poll() gave {got} for versions {[f.version for f in futures]}")
    for f in futures:
        try:
            f.wait(10)
        except ws.WeightSyncError as e:
            _confirm.bug(f"the send of version {f.version} failed: {type(e).__name__}: {e}")
sender.close()
_confirm.fine(f"every newest version applied (last {seed}), whichever Receive introduced its slot")
