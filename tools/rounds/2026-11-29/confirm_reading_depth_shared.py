"""Thread A reads; an apply waits; thread B's reading() must wait for it (CONS-2) and never see a change (CONS-1)."""
import threading
import time

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
r = ws.Receiver(s.handle(0))  # push
connect_inproc(s, [r])

a_in, a_out, b_in = threading.Event(), threading.Event(), threading.Event()
seen = {}


def reader_a():
    with r.reading():
        a_in.set()
        a_out.wait(20)


def reader_b():
    with r.reading(timeout=20):
        seen["entry"] = (r.version, float(r.weights["w"][0]))
        b_in.set()
        time.sleep(1.5)
        seen["exit"] = (r.version, float(r.weights["w"][0]))


ta = threading.Thread(target=reader_a, daemon=True)
ta.start()
a_in.wait(10)
f = s.send_async({"w": torch.ones(4)})
time.sleep(0.7)  # the apply thread now waits for A
tb = threading.Thread(target=reader_b, daemon=True)
tb.start()
b_in.wait(2)  # B entering here, while the apply waits, is already wrong; the read tells more
a_out.set()
tb.join(30)
f.wait(10)
if seen.get("entry") != seen.get("exit"):
    bug(f"thread B's reading() block saw {seen.get('entry')} then {seen.get('exit')}")
if "entry" not in seen:
    bug("thread B never entered reading()")
fine(f"thread B's block read one version throughout: {seen['entry']}")
