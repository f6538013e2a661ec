"""Helpers of the i_ confirm scripts: small weights, in-process receivers, bounded waits."""
import time

import torch


def weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(4, 6, generator=g), "b": torch.randn(6, generator=g), "step": torch.tensor(seed)}


def zeros_like(w, dtype=None):
    return {k: torch.zeros_like(v, dtype=dtype if (dtype is not None and v.is_floating_point()) else v.dtype)
            for k, v in w.items()}


def cast(w, dtype):
    return {k: (v.to(dtype) if v.is_floating_point() else v.clone()) for k, v in w.items()}


def same(a, b):
    return all(a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in b)


def wait_until(pred, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
