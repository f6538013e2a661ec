"""The receiver's pieces against the spec's own examples; no torch, no sender."""
import copy
import hashlib
import hmac
import json
import os
import socket
import struct
import subprocess
import sys
import threading

import msgpack
import numpy as np
import pytest
from support import MODULE, receiver_env

import weightsync_numpy as wn


def hexframe(text: str) -> bytes:
    return bytes.fromhex(" ".join(text.split()))


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


@pytest.mark.timeout(60)
def test_importing_the_module_imports_no_torch():
    code = "import sys, weightsync_numpy; assert 'torch' not in sys.modules; assert 'weightsync' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], env=receiver_env(), check=True, timeout=60)


# Spec 12.6 and 14.4: the frames a receiver writes, byte for byte (WIRE-5, WIRE-9).
READY = """00 00 00 58 88 a4 74 79 70 65 a5 52 65 61 64 79 a8 72 65 63 65 69 76 65 72 02 a7 76 65 72 73 69
6f 6e 07 a6 73 74 61 74 75 73 a2 6f 6b a6 64 65 74 61 69 6c a0 aa 68 6f 6c 64 73 5f 73 6c 6f 74
c3 a8 70 72 6f 74 6f 63 6f 6c a3 31 2e 31 ac 63 61 70 61 62 69 6c 69 74 69 65 73 90"""
READY_ERR = """00 00 00 66 88 a4 74 79 70 65 a5 52 65 61 64 79 a8 72 65 63 65 69 76 65 72 02 a7 76 65 72 73 69
6f 6e c0 a6 73 74 61 74 75 73 a5 65 72 72 6f 72 a6 64 65 74 61 69 6c ab 6d 69 73 73 69 6e 67 20
27 77 27 aa 68 6f 6c 64 73 5f 73 6c 6f 74 c2 a8 70 72 6f 74 6f 63 6f 6c a3 31 2e 31 ac 63 61 70
61 62 69 6c 69 74 69 65 73 90"""
ACK = """00 00 00 2f 85 a4 74 79 70 65 a3 41 63 6b a8 72 65 63 65 69 76 65 72 02 a7 76 65 72 73 69 6f 6e
09 a6 73 74 61 74 75 73 a2 6f 6b a6 64 65 74 61 69 6c a0"""
ACK_ERR = """00 00 00 44 85 a4 74 79 70 65 a3 41 63 6b a8 72 65 63 65 69 76 65 72 02 a7 76 65 72 73 69 6f 6e
09 a6 73 74 61 74 75 73 a5 65 72 72 6f 72 a6 64 65 74 61 69 6c b2 52 75 6e 74 69 6d 65 45 72 72
6f 72 3a 20 62 6f 6f 6d"""
JOIN = """00 00 00 65 84 a4 74 79 70 65 a4 4a 6f 69 6e a8 72 65 63 65 69 76 65 72 02 a5 6e 6f 6e 63 65 c4
20 20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f 30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e
3f a5 70 72 6f 6f 66 c4 20 40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50 51 52 53 54 55 56
57 58 59 5a 5b 5c 5d 5e 5f"""


def test_encoder_writes_the_spec_frames():
    ok = dict(receiver=2, version=7, status="ok", detail="", holds_slot=True, protocol="1.1", capabilities=[])
    assert frame(wn.encode("Ready", **ok)) == hexframe(READY)
    err = dict(receiver=2, version=None, status="error", detail="missing 'w'", holds_slot=False, protocol="1.1",
               capabilities=[])
    assert frame(wn.encode("Ready", **err)) == hexframe(READY_ERR)
    assert frame(wn.encode("Ack", receiver=2, version=9, status="ok", detail="")) == hexframe(ACK)
    assert frame(wn.encode("Ack", receiver=2, version=9, status="error", detail="RuntimeError: boom")) == \
        hexframe(ACK_ERR)
    join = dict(receiver=2, nonce=bytes(range(32, 64)), proof=bytes(range(64, 96)))
    assert frame(wn.encode("Join", **join)) == hexframe(JOIN)


def test_decoder_reads_the_spec_payloads():
    init = {"type": "Init", "protocol": "1.1", "receiver": 2, "manifest": [
        {"name": "w", "dtype": "float32", "shape": [2, 3], "device": "cpu", "offset": 0, "nbytes": 24},
        {"name": "step", "dtype": "int64", "shape": [], "device": "cpu", "offset": 64, "nbytes": 8}],
        "slots": [{"slot": 0, "device": "cpu", "nbytes": 128, "ipc": []},
                  {"slot": 1, "device": "cpu", "nbytes": 128, "ipc": []}],
        "version": 7, "slot": 1, "byteorder": "little", "capabilities": []}
    kind, fields = wn.decode(msgpack.packb(init))
    assert kind == "Init" and {"type": kind, **fields} == {**init, "data_plane": None}  # optional, nil by default
    # lenient decoding (WIRE-5): another key order, absent optional fields, longer integer forms
    lenient = dict(reversed(list(copy.deepcopy(init).items())))
    del lenient["capabilities"]
    for s in lenient["slots"]:
        del s["ipc"]
    payload = msgpack.packb(lenient).replace(b"\xa7version\x07", b"\xa7version\xcf" + (7).to_bytes(8, "big"))
    assert wn.decode(payload) == ("Init", {**{k: v for k, v in init.items() if k != "type"}, "data_plane": None})
    assert wn.decode(hexframe("81 a4 74 79 70 65 a4 53 74 6f 70")) == ("Stop", {})
    hello = {"type": "Hello", "protocol": "1.1", "nonce": bytes(range(32)), "extra": 1.5}
    assert wn.decode(msgpack.packb(hello, use_bin_type=True)) == ("Hello", {"protocol": "1.1", "nonce": bytes(range(32))})


@pytest.mark.parametrize("payload", [
    msgpack.packb({"type": "Receive", "version": 1.0, "slot": 0, "new_slots": []}),       # float for int
    msgpack.packb({"type": "Receive", "version": True, "slot": 0, "new_slots": []}),      # bool for int
    msgpack.packb({"type": "Receive", "version": -1, "slot": 0, "new_slots": []}),        # out of range
    msgpack.packb({"type": "Receive", "version": 1 << 63, "slot": 0, "new_slots": []}),   # out of range
    msgpack.packb({"type": "Receive", "version": 1, "slot": 0}),                          # missing field
    msgpack.packb({"type": "Stop"}) + b"\xc0",                                             # trailing bytes
    msgpack.packb(["Stop"]),                                                               # not a map
    msgpack.packb({"type": "Ack", "receiver": 0, "version": 1, "status": "ok", "detail": ""}),  # wrong direction
    msgpack.packb({"type": "Bogus"}),                                                      # unknown type
    msgpack.packb({"type": "Refuse", "detail": "x" * 4097}),                               # string too long
    b"\x82\xa4type\xa4Stop\xa4type\xa4Stop",                                               # duplicate key
    b"\x81\xa4type\xa4St\xffp",                                                            # invalid UTF-8
    msgpack.packb({"type": "Hello", "protocol": "1.1", "nonce": b"short"}, use_bin_type=True),
    msgpack.packb({"type": "Init", "protocol": "1.1", "receiver": 0, "manifest": [
        {"name": "w", "dtype": "int8", "shape": [1] * 65, "device": "cpu", "offset": 0, "nbytes": 1}],
        "slots": [], "version": 0, "slot": 0, "byteorder": "little"}),                     # 65 dimensions
])
def test_decoder_rejects_what_the_profile_forbids(payload):
    with pytest.raises(wn.RemoteProtocolError) as info:
        wn.decode(payload)
    assert info.value.requirement in ("WIRE-3", "MSG-3")


def test_join_proofs_match_the_spec_vectors():
    master = bytes(range(100, 132))
    secret = hmac.new(master, b"weightsync receiver 2", hashlib.sha256).digest()
    assert secret.hex() == "e252d90771e47f2664dd31739f1cc9bda0ec200272dd623f446c2f0cf8201318"
    ns, nr = bytes(range(32)), bytes(range(32, 64))
    assert wn.join_proof(secret, b"weightsync-join", ns, nr, 2).hex() == \
        "b78e0dec556b87315cba0b3a3a6633f7ba4170575765c6f08e07a7568aa7b3e3"
    assert wn.join_proof(secret, b"weightsync-welcome", ns, nr, 2).hex() == \
        "b912d6cea148953e290ef5933846b8c89e12340200d70cac1e463df7896c35a6"


def test_urls():
    sec = "ab" * 32
    assert wn.parse_url(f"unix:@weightsync-trainer?receiver=2&secret={sec}") == \
        ("\0weightsync-trainer", 2, bytes.fromhex(sec))
    assert wn.parse_url(f"unix:/tmp/a%3Fb%25c.sock?receiver=0&secret={sec}")[0] == "/tmp/a?b%c.sock"
    with pytest.raises(NotImplementedError):
        wn.parse_url(f"tcp://127.0.0.1:41000?receiver=0&secret={sec}")
    for bad in ["unix:@x", f"unix:@x?receiver=-1&secret={sec}", f"unix:@x?receiver=0&secret={sec[:-2]}",
                f"unix:@x?receiver=0&secret={sec.upper()}", f"http://x?receiver=0&secret={sec}",
                f"unix:?receiver=0&secret={sec}", f"unix:@?receiver=0&secret={sec}"]:
        with pytest.raises(ValueError):
            wn.Receiver(bad)


def test_bfloat16_widening():
    values = np.array([1.0, -2.5, 3.140625, 0.0, np.inf], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)     # exact: these fit in bfloat16
    assert np.array_equal(wn.bfloat16_to_float32(bits), values)
    with pytest.raises(TypeError):
        wn.bfloat16_to_float32(values)


@pytest.mark.timeout(120)
def test_a_squatter_without_the_secret_cannot_feed_weights(procs, address):
    """RDV-7: a process on the address that cannot prove the secret is a violation; no Init is read."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + address[len("unix:@"):])
    server.listen(1)
    server.settimeout(60)
    seen = {}

    def squat():
        conn, _ = server.accept()
        conn.settimeout(60)
        conn.sendall(frame(wn.encode("Hello", protocol="1.1", nonce=bytes(32))))
        size = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))[0]
        seen["join"] = wn.msgpack.unpackb(conn.recv(size, socket.MSG_WAITALL))
        conn.sendall(frame(wn.encode("Welcome", proof=bytes(32))))
        seen["eof"] = conn.recv(1) == b""      # the joiner hangs up at once
        conn.close()

    t = threading.Thread(target=squat)
    t.start()
    proc = procs(MODULE, f"{address}?receiver=3&secret={'cd' * 32}")
    line = proc.line(60)
    assert line.startswith("error RemoteProtocolError: RDV-7"), line
    assert proc.wait(60) != 0
    t.join(60)
    server.close()
    assert seen["join"]["receiver"] == 3 and len(seen["join"]["proof"]) == 32 and seen["eof"]
    assert json.dumps(proc.line(10)) == "null"    # nothing else on stdout


def test_decoder_reads_heartbeat():
    """MSG-4: Heartbeat, a message with no field (spec 12.6: {"type": "Heartbeat"})."""
    assert wn.decode(msgpack.packb({"type": "Heartbeat"})) == ("Heartbeat", {})
    assert wn.decode(msgpack.packb({"type": "Heartbeat", "extra": 1})) == ("Heartbeat", {})


class MiniTrainer:
    """The trainer's side by hand, on one joined unix connection: Hello, Welcome, then frames and slots."""

    def __init__(self, address: str, secret: bytes):
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind("\0" + address[len("unix:@"):])
        self.server.listen(1)
        self.server.settimeout(30)
        self.secret, self.conn, self.fds = secret, None, []

    def send(self, kind: str, fds=(), **fields) -> None:
        data = frame(wn.encode(kind, **fields))
        if fds:
            self.conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])
        else:
            self.conn.sendall(data)

    def recv(self) -> dict:
        size = struct.unpack(">I", self.conn.recv(4, socket.MSG_WAITALL))[0]
        return msgpack.unpackb(self.conn.recv(size, socket.MSG_WAITALL))

    def accept(self, welcome: bool = True) -> dict:
        self.conn, _ = self.server.accept()
        self.conn.settimeout(30)
        nonce = bytes(range(32))
        self.send("Hello", protocol="1.1", nonce=nonce)
        join = self.recv()
        if welcome:
            self.send("Welcome", proof=wn.join_proof(self.secret, b"weightsync-welcome", nonce, join["nonce"],
                                                     join["receiver"]))
        return join

    def slot(self, data: bytes, nbytes: int = 64) -> int:
        fd = os.memfd_create("wsnp-test-slot")
        os.write(fd, data.ljust(nbytes, b"\0"))
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        for s in (self.conn, self.server):
            if s is not None:
                s.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_heartbeats_are_ignored_before_init_and_while_live(address, mode):
    """MSG-4: Heartbeats after the join, before Init (state new) and while live (also between a Receive and
    the poll that applies it), change nothing: connect() returns the Init's version, the Receive is applied
    and acked, and only Stop stops the receiver."""
    secret = bytes(range(100, 132))
    trainer = MiniTrainer(address, secret)
    v0, v1 = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32) * -2.5
    manifest = [{"name": "w", "dtype": "float32", "shape": [4], "device": "cpu", "offset": 0, "nbytes": 16}]
    seen, live, go_on = {}, threading.Event(), threading.Event()

    def trainer_side():
        try:
            trainer.accept()
            for _ in range(3):
                trainer.send("Heartbeat")
            trainer.send("Init", fds=[trainer.slot(v0.tobytes())], protocol="1.1", receiver=0, manifest=manifest,
                         slots=[{"slot": 0, "device": "cpu", "nbytes": 64, "ipc": []}], version=0, slot=0,
                         byteorder=sys.byteorder, capabilities=[], data_plane=None)
            seen["ready"] = trainer.recv()
            trainer.send("Heartbeat")
            live.wait(30)
            trainer.send("Receive", fds=[trainer.slot(v1.tobytes())], version=1, slot=1,
                         new_slots=[{"slot": 1, "device": "cpu", "nbytes": 64, "ipc": []}])
            trainer.send("Heartbeat")
            go_on.set()
            seen["ack"] = trainer.recv()
            trainer.send("Heartbeat")
            trainer.send("Stop")
            seen["eof"] = trainer.conn.recv(1) == b""
        except Exception as e:  # noqa: BLE001 - reported by the test
            seen["error"] = e
            go_on.set()

    t = threading.Thread(target=trainer_side, daemon=True)
    t.start()
    try:
        with wn.Receiver(f"{address}?receiver=0&secret={secret.hex()}", mode=mode) as rec:
            assert rec.connect(timeout=30) == 0
            assert np.array_equal(rec.weights["w"], v0)
            live.set()
            if mode == "pull":   # a pull receiver reads only inside poll()
                assert go_on.wait(30)
                assert rec.poll(timeout=10) == 1
                for _ in range(30):
                    if rec.stopped:
                        break
                    assert rec.poll(timeout=1.0) is None
            assert rec._done.wait(30), "the receiver did not stop after Stop"
            assert rec.failure is None, rec.failure
            assert rec.version == 1 and np.array_equal(rec.weights["w"], v1)
        t.join(30)
        assert "error" not in seen, seen.get("error")
        assert seen["ready"]["status"] == "ok" and seen["ready"]["version"] == 0, seen["ready"]
        assert seen["ack"]["status"] == "ok" and seen["ack"]["version"] == 1, seen["ack"]
        assert seen["eof"]
    finally:
        trainer.close()


@pytest.mark.timeout(60)
def test_a_heartbeat_during_the_join_is_a_violation(address):
    """MSG-4 holds once the join is done: a Heartbeat where Welcome is due breaks RDV-3."""
    secret = bytes(range(100, 132))
    trainer = MiniTrainer(address, secret)
    t = threading.Thread(target=lambda: (trainer.accept(welcome=False), trainer.send("Heartbeat")), daemon=True)
    t.start()
    try:
        with wn.Receiver(f"{address}?receiver=0&secret={secret.hex()}") as rec:
            with pytest.raises(wn.RemoteProtocolError) as info:
                rec.connect(timeout=30)
            assert info.value.requirement == "RDV-3"
        t.join(30)
    finally:
        trainer.close()
