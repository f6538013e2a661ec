"""VER-2: a send rejected because no slot freed before its timeout (SLOT-3) consumes no version.
max_slots=2, a pull receiver that does not poll pins both slots after two sends; the third times out
with .version None, and sender.version stays 2; the next send, once a slot is free, publishes 3."""
import _confirm
import torch

ws = _confirm.module()
s = ws.Sender({"w": torch.zeros(4)}, 1, max_slots=2)
r = ws.Receiver(s.handle(0), {"w": torch.zeros(4)}, mode="pull")
_confirm.connect_inproc(s, [r], timeout=20)
s.send_async()
s.send_async()
try:
    f = s.send_async(timeout=0.3)
    _confirm.bug(f"setup: a third version {f.version} found a free slot")
except ws.SyncTimeoutError as e:
    if e.version is not None:
        _confirm.bug(f"the slot timeout says version {e.version} was published")
if s.version != 2:
    _confirm.bug(f"sender.version is {s.version} after a send rejected for want of a slot (expected 2)")
got = r.poll(5)
v = s.send_async(timeout=5).version
if v != 3:
    _confirm.bug(f"the next send published {v}, leaving a gap after 2")
_confirm.fine(f"version stayed 2, next is {v} (poll applied {got})")
