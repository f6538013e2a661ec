"""Helpers of the e_ confirm scripts: small weights, in-process receivers, bounded waits."""
import time

import _confirm
import torch


def weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(4, 6, generator=g), "b": torch.randn(6, generator=g), "step": torch.tensor(seed)}


def zeros_like(w):
    return {k: torch.zeros_like(v) for k, v in w.items()}


def connect(ws, sender, receivers, workers=None, timeout=20):
    _confirm.connect_inproc(sender, receivers, workers=workers, timeout=timeout)


def wait_until(pred, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
