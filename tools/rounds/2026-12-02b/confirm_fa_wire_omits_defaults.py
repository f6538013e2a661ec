"""A scripted receiver reads the Init a Unix-channel sender writes and checks its canonical form (WIRE-5): `type`
first, then every field of Table 12-1 in order (capabilities and data_plane included), each SlotInfo with all four
fields, slot/device/nbytes/ipc."""
import os
import socket
import struct

import msgpack
import torch
from _confirm import bug, fine, in_thread, module

ws = module()
s = ws.Sender({"w": torch.zeros(3, 2), "step": torch.zeros((), dtype=torch.int64)}, 1)
h = s.handle(0)
sock = socket.socket(fileno=os.dup(h.fileno()))
out, t = in_thread(s.connect, 3)
sock.settimeout(5)
buf, fds = b"", []
while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
    data, anc, _f, _a = sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 16))
    for _l, _t, payload in anc:
        fds += list(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) - len(payload) % 4]))
    if not data:
        raise SystemExit("no Init")
    buf += data
n = struct.unpack(">I", buf[:4])[0]
init = msgpack.unpackb(buf[4:4 + n], raw=False)
for fd in fds:
    os.close(fd)
sock.close()
t.join(8)  # connect() times out: nobody answers
s.close()
keys = list(init)
slot_keys = [list(si) for si in init.get("slots", [])]
want = ["type", "protocol", "receiver", "manifest", "slots", "version", "slot", "byteorder", "capabilities",
        "data_plane"]
if keys == want and all(k == ["slot", "device", "nbytes", "ipc"] for k in slot_keys):
    fine(f"Init keys {keys}, SlotInfo keys {slot_keys[0]}")
bug(f"Init not in canonical form: keys {keys}, SlotInfo keys {slot_keys}")
