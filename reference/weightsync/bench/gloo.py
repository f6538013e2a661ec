"""The floor of the network cases, a pool worker's side: a raw two-rank gloo group that receives each transfer.

Apart from network.py so that the pool, which runs it in a worker, and the cases, which time it, import it
without importing each other.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

from .cases import TIMEOUT

HOST = "127.0.0.1"


def gloo_group(store, prefix: str, rank: int) -> dist.ProcessGroupGloo:
    opts = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]  # private, no stub
    opts._devices = [dist.ProcessGroupGloo.create_device(hostname=HOST)]
    opts._timeout = datetime.timedelta(seconds=TIMEOUT)
    opts._threads = 1
    return dist.ProcessGroupGloo(dist.PrefixStore(prefix, store), rank, 2, opts)


def gloo_worker(store_port: int, prefix: str, nbytes: int) -> None:
    """A pool worker's side of the floor: receive each transfer, answer with one number, until told to stop."""
    store = dist.TCPStore(HOST, store_port, is_master=False, timeout=datetime.timedelta(seconds=TIMEOUT))
    group = gloo_group(store, prefix, 1)
    buf, go, ack = torch.empty(nbytes, dtype=torch.uint8), torch.zeros(1, dtype=torch.int64), torch.ones(1)
    while True:
        group.recv([go], 0, 0).wait()  # type: ignore[attr-defined]  # no stub
        if not go.item():
            return
        group.recv([buf], 0, 0).wait()  # type: ignore[attr-defined]  # no stub
        group.send([ack], 0, 0).wait()  # type: ignore[attr-defined]  # no stub
