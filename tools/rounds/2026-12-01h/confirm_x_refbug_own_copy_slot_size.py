"""Reference bug: a copying receiver without a target (target=None) copies each slot whole into a buffer of its own
made at connect with the size of the Init's slot. A slot introduced later (Receive.new_slots) with another size that
still holds every array of the manifest (LAYOUT-1: "a receiver accepts any size that holds every array of the
manifest") fails the copy: the receiver answers Ack(error) "The size of tensor a (64) must match the size of tensor b
(128)" for a version it could apply. (The same whole-slot copy is in CopyToPacked.) A scripted sender speaks the wire
on a socket pair (the handle is made with Handle(0, sock), the only non-public step), sends Init with a 64-byte slot,
then Receive(1) introducing a 128-byte slot. Exit 1 (BUG SEEN) when the receiver does not ack ok with the new bytes.
Breaks LAYOUT-1 and ACK-1/ACK-3 (the version is not applied although it is valid)."""
import array
import fcntl
import os
import socket
import struct

import msgpack
import torch
from _confirm import bug, fine, module
from _wirepeer import frame

ws = module()
F_ADD_SEALS = 1033


def memfd(data, size):
    fd = os.memfd_create("probe", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    os.pwrite(fd, data, 0)
    fcntl.fcntl(fd, F_ADD_SEALS, 1 | 2 | 4 | 8)  # seal, shrink, grow, write
    return fd


def read_frame(sock):
    buf = b""
    while len(buf) < 4:
        buf += sock.recv(4 - len(buf))
    (n,) = struct.unpack(">I", buf)
    body = b""
    while len(body) < n:
        body += sock.recv(n - len(body))
    return msgpack.unpackb(body, raw=False)


ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
ours.settimeout(10)
entry = {"name": "w", "dtype": "float32", "shape": [4], "device": "cpu", "offset": 0, "nbytes": 16}
init = {"type": "Init", "protocol": "1.1", "receiver": 0, "manifest": [entry],
        "slots": [{"slot": 0, "device": "cpu", "nbytes": 64, "ipc": []}], "version": 0, "slot": 0,
        "byteorder": "little", "capabilities": []}
v0 = torch.arange(4, dtype=torch.float32)
v1 = v0 + 10
ours.sendmsg([frame(init)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [memfd(v0.numpy().tobytes(), 64)]))])
r = ws.Receiver(ws.Handle(0, theirs), mode="pull")
r.connect(timeout=5)
ready = read_frame(ours)
rec = {"type": "Receive", "version": 1, "slot": 1, "new_slots": [{"slot": 1, "device": "cpu", "nbytes": 128, "ipc": []}]}
ours.sendmsg([frame(rec)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [memfd(v1.numpy().tobytes(), 128)]))])
err = None
try:
    r.poll(timeout=5)
except ws.WeightSyncError as e:
    err = e
ack = read_frame(ours)
held = r.weights["w"].clone() if r.version is not None else None
r.close()
ours.close()
if ready.get("status") != "ok":
    bug(f"Ready was {ready}")
if ack.get("status") != "ok" or held is None or not torch.equal(held, v1):
    bug(f"a Receive naming a 128-byte slot (the Init's was 64 bytes; both hold the 16-byte manifest) was answered "
        f"{ack.get('status')!r}: {ack.get('detail', '')[:120]} (LAYOUT-1: any size that holds every array)")
fine("the receiver applies a slot of another size that holds every array")
