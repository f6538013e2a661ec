"""Reference bug (LIFE-9): pull receiver; a reader thread holds a reading() block; a version arrives and the main
thread's poll(timeout=None) takes it from the channel and waits for the reader; Ctrl-C (SIGINT) interrupts that
wait. LIFE-9: an asynchronous exception inside such a wait MUST leave the object as a timeout of that wait would,
"so ... a later poll() applies the newest pending version". A timeout there puts the version back (untake); the
interrupt does not, so once the reader has left, poll() returns None, the version is never applied nor acked, and
the sender's wait for it times out. Exit 1 on the reference."""
import signal
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r], timeout=10)
inside, leave = threading.Event(), threading.Event()


def reader():
    with r.reading(timeout=5):
        inside.set()
        leave.wait(10)


rt = threading.Thread(target=reader, daemon=True)
rt.start()
inside.wait(5)
f = s.send_async({"w": torch.ones(4)})
time.sleep(0.3)
threading.Timer(1.0, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)).start()
try:
    got = r.poll(timeout=None)
    bug(f"poll() returned {got} without the interrupt")  # not reached: the reader holds its block
except KeyboardInterrupt:
    pass
leave.set()
rt.join(5)
got = r.poll(2)
if got != 1:
    try:
        f.wait(1)
        extra = "the send completed"
    except ws.WeightSyncError as e:
        extra = f"the send's wait raised {type(e).__name__}"
    s.close()
    r.close()
    bug(f"after Ctrl-C interrupted poll()'s wait for a reader, the next poll() gave {got!r} instead of applying "
        f"version 1; {extra}")
f.wait(5)
s.close()
r.close()
fine("after the interrupt, the next poll() applied the pending version 1")
