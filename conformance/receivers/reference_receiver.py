"""A receiver program for `pytest conformance --receiver-cmd`, built on the reference binding.

    python conformance/receivers/reference_receiver.py URL [pull|push]

It follows the suite's test-control contract (docs/conformance.md): join URL,
print `applied VERSION SHA256` for every version it holds (SHA-256 of the
arrays' bytes in manifest order), `stopped` once no version can come any more,
and `error TEXT` when it fails.
"""

from __future__ import annotations

import hashlib
import sys
import time

import torch

import weightsync


def digest(weights) -> str:
    h = hashlib.sha256()
    for t in weights.values():
        if t.numel():
            h.update(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def main(url: str, mode: str = "pull") -> int:
    receiver = weightsync.Receiver(url, mode=mode)
    last = None

    def report():
        nonlocal last
        with receiver.reading():
            if receiver.version is not None and receiver.version != last:
                last = receiver.version
                print(f"applied {last} {digest(receiver.weights)}", flush=True)

    try:
        receiver.connect(timeout=60)
        while not receiver.stopped:
            report()
            if mode == "pull":
                receiver.poll(0.05)
            else:
                time.sleep(0.005)
        report()
        print("stopped", flush=True)
        return 0
    except weightsync.WeightSyncError as e:
        print(f"error {type(e).__name__}: {e}", flush=True)
        return 1
    finally:
        receiver.close()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
