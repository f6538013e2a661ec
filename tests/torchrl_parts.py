"""A policy and an env for the TorchRL tests, importable by the collectors' spawned workers.

The policy's action is its bias: setting every weight to 0 and the bias to k makes
each frame say which weights produced it, whatever the observation.
"""

from __future__ import annotations

import torch
from tensordict.nn import TensorDictModule
from torch import nn


def make_env():
    from torchrl.envs.custom import PendulumEnv  # pure torch: no simulator package

    return PendulumEnv()


class PolicyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)

    def forward(self, th, thdot):
        return self.lin(torch.stack([th, thdot], -1))


def make_policy() -> TensorDictModule:
    return TensorDictModule(PolicyNet(), in_keys=["th", "thdot"], out_keys=["action"])


@torch.no_grad()
def set_constant(policy: nn.Module, k: float) -> None:
    """Every action of `policy` is now exactly k."""
    for name, p in policy.named_parameters():
        p.fill_(0.0 if name.endswith("weight") else k)
