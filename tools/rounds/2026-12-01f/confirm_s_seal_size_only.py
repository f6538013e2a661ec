"""Two receivers: 0 a real zero-copy receiver, 1 a scripted one (the documented wire) that takes the slot
descriptors of its Init, reopens each through /proc/self/fd for writing and tries pwrite, ftruncate and a writable
shared mapping. SEC-4: every one of them fails, and receiver 0 keeps reading the bytes the sender published."""
import errno
import mmap
import os

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.full((16,), 7.0)}, 2)
r0 = ws.Receiver(s.handle(0), zero_copy=True)
peer = Peer(s.handle(1), timeout=10)
o0, t0 = in_thread(r0.connect, 20)
os_, ts = in_thread(s.connect, 20)
init = peer.read()
peer.send(peer.ready_msg(init))
ts.join(20)
t0.join(20)
for o in (o0, os_):
    if "error" in o:
        raise o["error"]
fds = list(peer.fds)
if len(fds) != len(init["slots"]) or not fds:
    raise SystemExit(f"expected one descriptor per slot, got {len(fds)} for {len(init['slots'])}")

done = []
for fd in fds:
    try:
        rw = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    except OSError:
        continue  # cannot even reopen it for writing: fine
    try:
        try:
            os.pwrite(rw, b"\xff" * 64, 0)
            done.append(f"pwrite through fd {fd}")
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EACCES, errno.EBADF):
                raise
        try:
            os.ftruncate(rw, 1)
            done.append(f"ftruncate of fd {fd}")
        except OSError:
            pass
        try:
            m = mmap.mmap(rw, 64, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            m.close()
            done.append(f"writable shared mapping of fd {fd}")
        except (OSError, ValueError):
            pass
    finally:
        os.close(rw)

with r0.reading():
    seen = r0.weights["w"].clone()
peer.close()
r0.close()
s.close()
if done:
    bug(f"a receiver changed its slot through its own descriptors: {', '.join(done)}; zero-copy receiver 0 "
        f"now reads w[:4] = {seen[:4].tolist()} (published: 7.0)")
if not torch.equal(seen, torch.full((16,), 7.0)):
    bug(f"receiver 0 reads {seen[:4].tolist()}, published 7.0")
fine(f"pwrite, ftruncate and a writable mapping through each of {len(fds)} slot descriptors failed; receiver 0 "
     "reads 7.0")
