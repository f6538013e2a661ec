"""Two sends to workers=[0] must leave a zero-copy receiver 1's weights as they were (CONS-5, ZC-2)."""
import _confirm
import g_helpers as h

ws = _confirm.module()
w0 = h.weights(0)
own = {k: v.clone() for k, v in w0.items()}
sender = ws.Sender(own, 2)
r0 = ws.Receiver(sender.handle(0))  # push, copies
r1 = ws.Receiver(sender.handle(1), mode="pull", zero_copy=True)  # views the slot of its version; never polls here
h.connect(sender, [r0, r1])
assert r1.version == 0 and h.same(dict(r1.weights), w0)
for seed in (1, 2, 3):
    h.load(h.weights(seed), own)
    v = sender.send(workers=[0], timeout=10)
    if not h.same(dict(r1.weights), w0):
        _confirm.bug(f"after send(workers=[0]) of version {v}, zero-copy receiver 1 (version {r1.version}, left "
                     f"out) no longer shows version 0: its weights equal version {seed}'s: "
                     f"{h.same(dict(r1.weights), h.weights(seed))}")
    assert h.same(dict(r0.weights), h.weights(seed)) or h.wait_until(lambda: r0.version == v, 5)  # noqa: B023
sender.close()
_confirm.fine("receiver 1 kept version 0's bytes through three sends to receiver 0 alone")
