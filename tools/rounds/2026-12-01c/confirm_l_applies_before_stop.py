"""A scripted sender on the documented wire (spec 12): a socket pair whose one end is a `Handle`, the other
ours. It sends Init (two memfd slots, version 0 in slot 0), reads Ready, writes version 1 into
slot 1, then sends Receive(1, slot 1) and Stop in one write, keeping the channel open. A pull receiver's
next poll() must return None and keep version 0 (LIFE-7); its `stopped` is true."""
import array
import os
import socket
import struct
import sys

import msgpack
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _confirm import bug, fine, in_thread, module  # noqa: E402

ws = module()


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def memfd(values):
    fd = os.memfd_create("slot")
    os.write(fd, torch.tensor(values, dtype=torch.float32).numpy().tobytes().ljust(64, b"\0"))
    return fd


ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
ours.settimeout(10)
rec = ws.Receiver(ws.Handle(0, theirs), mode="pull")
entry = {"name": "w", "dtype": "float32", "shape": [4], "device": "cpu", "offset": 0, "nbytes": 16}
slots = [{"slot": s, "device": "cpu", "nbytes": 64, "ipc": []} for s in (0, 1)]
fd0, fd1 = memfd([0.0] * 4), memfd([0.0] * 4)
init = {"type": "Init", "protocol": "1.1", "receiver": 0, "manifest": [entry], "slots": slots, "version": 0,
        "slot": 0, "byteorder": sys.byteorder, "capabilities": [], "data_plane": None}
out, t = in_thread(rec.connect, 10)
ours.sendmsg([frame(init)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd0, fd1]))])
t.join(10)
if "error" in out:
    raise out["error"]
buf = b""
while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
    buf += ours.recv(65536)
ready = msgpack.unpackb(buf[4:], raw=False)
assert ready["type"] == "Ready" and ready["status"] == "ok", ready
os.pwrite(fd1, torch.ones(4).numpy().tobytes(), 0)
ours.sendall(frame({"type": "Receive", "version": 1, "slot": 1, "new_slots": []}) + frame({"type": "Stop"}))
got = rec.poll(timeout=2)
stopped = rec.stopped
with rec.reading():
    w = rec.weights["w"].clone()
print("poll ->", got, "stopped", stopped, "version", rec.version, "w", w.tolist())
if got is not None or rec.version != 0 or not torch.equal(w, torch.zeros(4)):
    bug(f"after Receive(1) then Stop, poll() returned {got} and the receiver holds version {rec.version} "
        f"({w.tolist()}): a version still unread at Stop was applied (LIFE-7)")
if not stopped:
    bug("receiver not stopped after Stop")
fine("the version unread at Stop was not applied; poll() returned None")
