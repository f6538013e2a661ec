"""A pull worker with on_apply: the hook must have been called for the Init's version in the thread that called
connect(), before connect() returned, and for a polled version in the polling thread, before poll() returned
(API-11)."""
import threading
import time

import torch
from _confirm import bug, fine, module

ws = module()
calls = []


def hook(version):
    time.sleep(0.05)  # a hook that does some work (logs, swaps a model)
    calls.append((version, threading.current_thread().name))


s = ws.Sender({"w": torch.zeros(8)}, 1)
r = ws.Receiver(s.handle(0), mode="pull", on_apply=hook)
main = threading.current_thread().name
try:
    out = {}

    def connect():
        out["v"] = r.connect(timeout=20)
        out["calls"] = list(calls)
        out["thread"] = threading.current_thread().name

    t = threading.Thread(target=connect, name="worker-connect", daemon=True)
    t.start()
    s.connect(timeout=20)
    t.join(20)
    s.send_async({"w": torch.ones(8)}, timeout=10)
    time.sleep(0.3)
    got = r.poll(timeout=5)
    at_poll = list(calls)
finally:
    s.close()
    r.close()
if out.get("calls") != [(0, "worker-connect")]:
    bug(f"when connect() returned version {out.get('v')} in thread {out.get('thread')}, on_apply had been called "
        f"{out.get('calls')} (API-11: in the thread that applied it)")
if got != 1 or at_poll[1:] != [(1, main)]:
    bug(f"when poll() returned {got} in {main}, on_apply had been called {at_poll} (API-11)")
fine(f"on_apply ran in the applying thread: {at_poll}")
