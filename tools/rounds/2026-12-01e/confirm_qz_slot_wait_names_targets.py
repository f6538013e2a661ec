"""Receiver 0 is a pull worker that stopped polling: its unanswered Receive pins a slot. With max_slots=2, a send
to receiver 1 alone then finds no free slot; its SyncTimeoutError must name receiver 0, which holds the slots
(SLOT-3, SEC-5), with `.version` None, not receiver 1, which answered everything."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 2, max_slots=2)
stuck = ws.Receiver(s.handle(0), mode="pull")
healthy = ws.Receiver(s.handle(1))
connect_inproc(s, [stuck, healthy], timeout=20)
s.send_async(workers=[0], timeout=5)  # version 1: receiver 0 never polls for it
if s.send(workers=[1], timeout=5) != 2:
    bug("a send to the healthy receiver did not return 2")
try:
    s.send(workers=[1], timeout=1)
    bug("a third version found a slot although the bound is 2 and receiver 0 pins one")
except ws.SyncTimeoutError as e:
    named, version = e.workers, e.version
healthy.close()
stuck.close()
s.close()
if named != [0]:
    bug(f"the slot wait's SyncTimeoutError named {named}, not [0], the receiver holding the slot (SLOT-3)")
if version is not None:
    bug(f"the slot wait's SyncTimeoutError carries version {version}, not None")
fine("the slot wait's SyncTimeoutError names the receiver that holds the slots")
