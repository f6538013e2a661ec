"""Weights given in the order layer2.weight, layer10.weight, head.bias (not sorted); a scripted receiver reads the
Init on the handle's descriptor: its manifest must list the arrays in that order, at increasing offsets (API-1,
MSG-1)."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
names = ["layer2.weight", "layer10.weight", "head.bias"]
s = ws.Sender({n: torch.full((4,), float(i)) for i, n in enumerate(names)}, 1)
peer = Peer(s.handle(0), timeout=15)
out, t = in_thread(s.connect, 15)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(15)
man = [(e["name"], e["offset"]) for e in init["manifest"]]
peer.close()
s.close()
if [n for n, _ in man] != names:
    bug(f"the Init's manifest lists {man}; the weights gave {names} (API-1, MSG-1)")
if "error" in out:
    bug(f"connect raised {out['error']!r}")
fine(f"manifest in the weights' order: {man}")
