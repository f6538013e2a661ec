"""Weights with an empty array after a 12-byte one (`w: float32[3]`, `e: float32[0]`, `b: float32[4]`); a scripted
receiver reads the Init on the handle's descriptor: every Entry.offset must be a multiple of 64, the empty array's
included (LAYOUT-1, WIRE-8). It answers Ready and the sender closes."""
import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.arange(3.0), "e": torch.zeros(0), "b": torch.ones(4)}, 1)
peer = Peer(s.handle(0), timeout=15)
out, t = in_thread(s.connect, 15)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(15)
man = [(e["name"], e["offset"], e["nbytes"]) for e in init["manifest"]]
peer.close()
s.close()
odd = [m for m in man if m[1] % 64]
if odd:
    bug(f"Init's manifest {man}: offsets {odd} are not multiples of 64 (LAYOUT-1, WIRE-8)")
if "error" in out:
    bug(f"connect raised {out['error']!r}")
fine(f"every offset a multiple of 64: {man}")
