import time

import _confirm
import torch

ws = _confirm.module()

sender = ws.Sender({"w": torch.zeros(4)}, 1)
seen = []
r = ws.Receiver(sender.handle(0), mode="push", on_apply=seen.append)
_confirm.connect_inproc(sender, [r])
sender.send({"w": torch.ones(4)}, timeout=10)
time.sleep(0.3)
sender.close(); r.close()
if seen != [0, 1]:
    _confirm.bug(f"on_apply was called with {seen}, expected [0, 1] (the Init's version included)")
_confirm.fine(f"on_apply saw {seen}")
