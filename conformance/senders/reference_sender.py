"""A sender program for `pytest conformance --sender-cmd`, built on the reference binding.

    python conformance/senders/reference_sender.py LAYOUT_JSON RECEIVERS [MODULE]

It follows the suite's sender test-control contract (docs/conformance.md): a sender of
the layout's arrays holding the weights of seed 0, listening on an abstract Unix name;
it prints `url ID URL` per receiver and `listening`, then answers one line per command
read from standard input (connect, send, async, wait, drop, close). MODULE (default
weightsync) is any module exposing the binding's Sender: the suite runs this program over
a sender-only module (API-12) to test it with its scripted receivers.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import sys
import time

import torch

DTYPES = {"bool": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
          "uint8": torch.uint8, "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64, "complex64": torch.complex64, "complex128": torch.complex128}


def weights(seed: int, arrays) -> dict[str, torch.Tensor]:
    """The weights of `seed`: each array's bytes are SHAKE-128 of "SEED NAME" (bool: each byte mod 2)."""
    out = {}
    for name, dtype, shape in arrays:
        t = DTYPES[dtype]
        nbytes = math.prod(shape) * t.itemsize
        raw = bytearray(hashlib.shake_128(f"{seed} {name}".encode()).digest(nbytes))
        if dtype == "bool":
            raw = bytearray(b & 1 for b in raw)
        flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        out[name] = flat.view(t).reshape(shape).clone()
    return out


#: How long an `async` command waits for a free slot (SLOT-3); the contract gives it no timeout.
SLOT_WAIT = 30.0
def failure(e: BaseException) -> str:
    """`ID=CAUSE ...` of a receivers' error (SEND-7)."""
    causes = getattr(e, "causes", None) or {}
    return " ".join(f"{w}={causes.get(w, 'error')}" for w in sorted(getattr(e, "workers", ()) or ()))


def main(layout_path: str, receivers: str, module: str = "weightsync") -> int:
    ws = importlib.import_module(module)
    #: The errors that name receivers at fault (SEND-7).
    receivers_errors = (ws.ReceiverError, ws.ReceiverDiedError, ws.SyncTimeoutError)
    with open(layout_path) as f:
        arrays = json.load(f)
    n = int(receivers)
    sender = ws.Sender(weights(0, arrays), n, listen=f"unix:@reference-sender-{os.getpid()}")
    futures = {}  # version -> its SendFuture

    def say(line: str) -> None:
        print(line, flush=True)

    def workers(ids: list[str]):
        return [int(i) for i in ids] or None

    def publish(seed: str, ids: list[str], timeout: float | None = None) -> int | None:
        """Publishes the weights of `seed`; the version, or None when nothing was published (said `refused`)."""
        try:
            future = sender.send_async(weights(int(seed), arrays), workers=workers(ids),
                                       timeout=SLOT_WAIT if timeout is None else timeout)
        except (ws.WeightSyncError, ValueError) as e:  # SEND-4, SEND-6, SLOT-3: nothing published
            say(f"refused {type(e).__name__}: {e}")
            return None
        futures[future.version] = future
        return future.version

    def wait(version: int, timeout: str) -> None:
        if version not in futures:
            say(f"refused no send published version {version}")
            return
        try:
            futures[version].wait(float(timeout))
            say(f"returned {version}")
        except receivers_errors as e:
            say(f"failed {version} {failure(e)}")

    try:
        for i in range(n):
            say(f"url {i} {sender.url(i)}")
        say("listening")
        for line in sys.stdin:
            cmd, *args = line.split() or [""]
            if cmd == "connect":
                try:
                    sender.connect(float(args[0]), workers=workers(args[1:]))
                    say("connected")
                except receivers_errors as e:
                    say(f"failed connect {failure(e)}")
            elif cmd == "send":  # send() is send_async() and wait() under one timeout
                start = time.monotonic()
                if (version := publish(args[0], args[2:], float(args[1]))) is not None:
                    wait(version, str(max(0.0, float(args[1]) - (time.monotonic() - start))))
            elif cmd == "async":
                if (version := publish(args[0], args[1:])) is not None:
                    say(f"published {version}")
            elif cmd == "wait":
                wait(int(args[0]), args[1])
            elif cmd == "drop":
                try:
                    sender.drop(int(args[0]))
                    say(f"dropped {args[0]}")
                except (ws.WeightSyncError, ValueError) as e:
                    say(f"refused {type(e).__name__}: {e}")
            elif cmd == "close":
                break
            else:
                say(f"refused unknown command {cmd!r}")
    finally:
        sender.close()
    say("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
