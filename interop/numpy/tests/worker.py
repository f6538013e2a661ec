"""A receiver process for the tests, over weightsync_numpy's public API (NumPy only).

    python worker.py URL push|pull 0|1(zero_copy)

Connects, prints ``connected VERSION SHA256``, then answers one line per command read
from stdin: ``hash`` (version and SHA-256 of the weights, read inside reading()), ``poll``
(pull: poll(timeout=30)), ``meta`` (name -> dtype, shape, writeable as JSON), ``write NAME``
(try to write into an array), ``widen NAME`` (SHA-256 of bfloat16_to_float32 of it),
``modules`` (whether torch or weightsync were imported), ``hold`` / ``release`` (enter and
leave a reading() block that stays open in between), ``quit``. A command that raises a
WeightSyncError answers ``raised CLASS``.
"""
import hashlib
import json
import sys

import weightsync_numpy as wn


def main() -> int:
    url, mode, zero_copy = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    out = lambda *a: print(*a, flush=True)
    receiver = wn.Receiver(url, mode=mode, zero_copy=zero_copy)
    try:
        version = receiver.connect(timeout=60)
    except wn.WeightSyncError as e:
        out("error", type(e).__name__, str(e).replace("\n", " "))
        return 1
    out("connected", version, wn.weights_sha256(receiver.weights))
    held = []
    for line in sys.stdin:
        try:
            if command(receiver, held, *line.split()):
                break
        except wn.WeightSyncError as e:
            out("raised", type(e).__name__)
    receiver.close()
    out("closed")
    return 0


def command(receiver, held, cmd, *args) -> bool:
    out = lambda *a: print(*a, flush=True)
    if cmd == "hash":
        with receiver.reading(timeout=30):
            out("hash", receiver.version, wn.weights_sha256(receiver.weights))
    elif cmd == "poll":
        version = receiver.poll(timeout=30)
        out("polled", version, wn.weights_sha256(receiver.weights))
    elif cmd == "meta":
        out("meta", json.dumps({k: [str(a.dtype), list(a.shape), bool(a.flags.writeable)]
                                for k, a in receiver.weights.items()}, separators=(",", ":")))
    elif cmd == "write":
        try:
            receiver.weights[args[0]][...] = 0
            out("wrote")
        except ValueError as e:
            out("ValueError", str(e))
    elif cmd == "widen":
        out("widen", hashlib.sha256(wn.bfloat16_to_float32(receiver.weights[args[0]]).tobytes()).hexdigest())
    elif cmd == "modules":
        out("modules", "torch" in sys.modules, "weightsync" in sys.modules)
    elif cmd == "hold":
        held.append(receiver.reading(timeout=30))
        held[-1].__enter__()
        out("held", receiver.version)
    elif cmd == "release":
        held.pop().__exit__(None, None, None)
        out("released")
    elif cmd == "quit":
        return True
    return False


if __name__ == "__main__":
    sys.exit(main())
