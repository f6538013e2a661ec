"""connect(timeout=0.3) before the worker started times out; the worker then starts and connect() again must
take it live (INIT-5, API-2)."""
import torch
from _confirm import bug, fine, in_thread, module

ws = module()
w = {"w": torch.zeros(4)}
with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull")  # the worker's process is still importing: no connect() yet
    try:
        s.connect(timeout=0.3)
        print("first connect returned: no conclusion")
    except ws.SyncTimeoutError as e:
        print("first connect timed out as expected:", e.workers)
    # the slow worker is up now
    out, t = in_thread(rx.connect, 15)
    try:
        s.connect(timeout=15)
    except ws.WeightSyncError as e:
        t.join(3)
        rx.close()
        bug(f"connect() after a timed-out connect() raised {type(e).__name__}: {e}")
    t.join(15)
    rx.close()
print("receiver:", out)
fine("the second connect() took the slow worker live")
