"""A worker for the network tests, started with subprocess as a process on another host would be.

    python tests/net_worker.py URL [push|pull] [--rejoin]

It prints `applied VERSION SHA256` for each version it holds (as the conformance
suite's receiver contract says), `stopped` when its receiver stops, and with
--rejoin joins again with the same URL after a stop it did not ask for; it exits
once a join fails (the sender is closed) or after a Stop.
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
            h.update(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def follow(url: str, mode: str) -> bool:
    """One receiver's life: join, report every version, until it stops; False when the join failed."""
    receiver = weightsync.Receiver(url, mode=mode)
    try:
        try:
            receiver.connect(timeout=20)
        except weightsync.WeightSyncError as e:
            print(f"error {type(e).__name__}: {e}", flush=True)
            return False
        last = None

        def report():
            nonlocal last
            with receiver.reading():
                if receiver.version != last:
                    last = receiver.version
                    print(f"applied {last} {digest(receiver.weights)}", flush=True)

        while not receiver.stopped:
            report()
            if mode == "pull":
                try:
                    receiver.poll(0.05)
                except weightsync.RemoteProtocolError as e:  # what stopped it, raised once by a poll under way
                    print(f"failed {e.requirement}", flush=True)  # (SM-R-7; NET-4: a lease expired)
            else:
                time.sleep(0.005)
        report()  # the version it holds at the end
        print("stopped", flush=True)
        return True
    finally:
        receiver.close()


def main(url: str, mode: str = "push", *flags: str) -> int:
    while follow(url, mode) and "--rejoin" in flags:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
