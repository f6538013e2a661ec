import threading
import time

import _confirm
import torch

ws = _confirm.module()

sender = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(sender.handle(0), mode="pull")
_confirm.connect_inproc(sender, [r])
inside, leave = threading.Event(), threading.Event()
def reader():
    with r.reading():
        inside.set()
        leave.wait(10)
t = threading.Thread(target=reader, daemon=True); t.start()
inside.wait(5)
fut = sender.send_async({"w": torch.ones(4)})
time.sleep(0.3)
first = r.poll(timeout=0.5)  # the reader holds it back: None, and the version stays pending
leave.set(); t.join(5)
second = r.poll(timeout=2)
try:
    v = fut.wait(3)
except ws.WeightSyncError as e:
    v = repr(e)[:80]
sender.close(); r.close()
if first is not None:
    _confirm.fine(f"(setup) the first poll applied {first} despite the reader")
if second != 1:
    _confirm.bug(f"the version held back by a reader was lost: the next poll() returned {second}; send: {v}")
_confirm.fine(f"the held-back version was applied by the next poll(): {second}; send returned {v}")
