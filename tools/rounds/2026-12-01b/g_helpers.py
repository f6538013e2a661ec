"""Helpers of the g_ confirm scripts: small weights, in-process receivers, bounded waits."""
import time

import _confirm
import torch


def weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(4, 6, generator=g), "b": torch.randn(6, generator=g)}


def zeros():
    return {"w": torch.zeros(4, 6), "b": torch.zeros(6)}


def same(a, b):
    return all(torch.equal(a[k], b[k]) for k in b)


def connect(sender, receivers, workers=None, timeout=20):
    _confirm.connect_inproc(sender, receivers, workers=workers, timeout=timeout)


def wait_until(pred, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def load(src, into):
    """Copies the values of `src` into the tensors of `into` (a sender's own mapping), in place."""
    for k, v in src.items():
        into[k].copy_(v)
