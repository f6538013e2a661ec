"""Reference bug (not a seeded one): a TCP pull receiver whose sender broke the protocol while no poll() was
waiting never raises the violation: poll() returns None. The network profile reads the channel in a thread of its
own (pending.NetworkPending._io), which stops the receiver and keeps the error for poll() (`unreported`); but poll()
returns None as soon as it sees the receiver stopped, before it looks at that error. SM-R-7: the receiver "MUST
raise RemoteProtocolError naming the state, the event and the requirement broken to its caller: ... from `poll()`
in pull mode". (docs/guides/across-machines.md also promises that a lease expiry is "raised by its next poll()".)

Reproduction on the documented wire: a TCP proxy between the worker and a reference Sender forwards every byte (the
join's proofs bind nonces and the id, not the address) and, once the worker is live, slips one frame into the
sender-to-receiver stream between two frames: Receive(version=0), older than the version the worker holds (VER-3).
The worker stops (stopped is true), and its next poll() must raise RemoteProtocolError.
Exit 1 when poll() returns instead (the reference today), 0 when it raises.
"""
import socket
import struct
import threading
import time

import msgpack
import torch
from _confirm import bug, fine, in_thread, module


def frame(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


class Proxy:
    def __init__(self, target):
        self.target = target
        self.ls = socket.create_server(("127.0.0.1", 0))
        self.port = self.ls.getsockname()[1]
        self.inject = None
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        c, _ = self.ls.accept()
        u = socket.create_connection(self.target)
        self.c, self.u = c, u
        threading.Thread(target=self._pipe, args=(c, u), daemon=True).start()
        threading.Thread(target=self._down, args=(u, c), daemon=True).start()

    def _pipe(self, a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    def _down(self, a, b):
        """Sender to receiver, frame by frame, so that an injected frame lands between two."""
        buf = b""
        try:
            while data := a.recv(65536):
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                    n = 4 + struct.unpack(">I", buf[:4])[0]
                    with self.lock:
                        b.sendall(buf[:n])
                    buf = buf[n:]
        except OSError:
            pass

    def send_now(self, raw):
        with self.lock:
            self.c.sendall(raw)


ws = module()
s = ws.Sender({"w": torch.zeros(64)}, 1, listen="tcp://127.0.0.1:0")
host, port = s.address[len("tcp://"):].rsplit(":", 1)
proxy = Proxy((host, int(port)))
url = s.url(0).replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}", 1)
r = ws.Receiver(url, mode="pull")
out, t = in_thread(r.connect, 20)
s.connect(timeout=20)
t.join(20)
if "error" in out:
    raise SystemExit(f"setup failed: {out['error']!r}")
f = s.send_async(timeout=10)
if r.poll(5) != 1:
    raise SystemExit("setup failed: version 1 not applied")
f.wait(5)
proxy.send_now(frame({"type": "Receive", "version": 0, "slot": 0, "new_slots": []}))  # VER-3: not newer
t0 = time.monotonic()
while not r.stopped and time.monotonic() - t0 < 5:
    time.sleep(0.05)
stopped = r.stopped
try:
    got = r.poll(0)
    raised = None
except Exception as e:  # noqa: BLE001
    got, raised = None, e
failure = r.failure
r.close()
s.close()
if not stopped:
    raise SystemExit("setup failed: the worker did not stop on a stale Receive")
if isinstance(raised, ws.RemoteProtocolError):
    fine(f"poll() raised {raised!r}"[:300])
bug(f"the worker stopped on the sender's violation, but poll() returned {got!r} (raised {raised!r}); the error is "
    f"only in receiver.failure: {failure!r}"[:500])
