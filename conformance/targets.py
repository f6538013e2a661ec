"""Target objects built from a weight spec: mappings, modules and TensorDicts (API-3).

The worker server opens receivers on them and injects faults through them (a
mapping whose reads pause: a slow apply); the state machine test builds its
sender's source object with the same `build_target`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping


class ControlledMapping(Mapping):
    """A plain mapping target whose reads can pause on demand (a slow apply).

    ACK-7 makes every apply look at the target as it is at that moment, so any
    conforming implementation reads it during each apply; a pause there widens
    the window between taking a Receive and finishing its apply.
    """

    def __init__(self, tensors: dict):
        self._tensors = tensors
        self.pause = 0.0
        self.pause_once = 0.0

    def _trip(self) -> None:
        if self.pause_once:
            delay, self.pause_once = self.pause_once, 0.0
            time.sleep(delay)
        if self.pause:
            time.sleep(self.pause)

    def __getitem__(self, key):
        self._trip()
        return self._tensors[key]

    def __iter__(self):
        self._trip()
        return iter(self._tensors)

    def __len__(self):
        return len(self._tensors)

    def items(self):
        self._trip()
        return self._tensors.items()


def held_by(target) -> dict:
    """Name -> tensor as `target` holds it now: a module's state_dict, a TensorDict's leaves (nested keys
    joined with "."), a mapping's items. Read without the pauses of a ControlledMapping."""
    if isinstance(target, ControlledMapping):
        return dict(target._tensors)
    if hasattr(target, "state_dict"):
        return dict(target.state_dict())
    if hasattr(target, "flatten_keys"):
        return dict(target.flatten_keys(".").items())
    return dict(target)


def nestable(torch, spec) -> bool:
    """Names that a module and a nested TensorDict can hold: no name is a prefix of another,
    and no part shadows an nn.Module attribute."""
    names = [n for n, _, _ in spec]
    plain = torch.nn.Module()
    for n in names:
        if any(o != n and o.startswith(n + ".") for o in names):
            return False
        if any(hasattr(plain, part) for part in n.split(".")):
            return False
    return True


def usable_kind(torch, capabilities, kind, spec):
    """The target kind a test asked for, or for a binding that takes no mapping target (no `mapping` capability)
    the kind it declares instead (a TensorDict, a module), or None (the receiver's own weights): a test about
    something else still runs. A test about mapping targets themselves asks for `needs("mapping")`."""
    if kind != "mapping" or "mapping" in capabilities:
        return kind
    return next((k for k in ("tensordict", "module") if k in capabilities and nestable(torch, spec)), None)


def build_target(torch, kind: str, spec):
    """(target, name -> tensor it holds) for a target of `kind` matching `spec` (API-3).

    Floating entries of a module are Parameters (requires_grad), as in a real policy;
    dotted names become nested modules or nested TensorDict keys.
    """
    tensors = {name: torch.zeros(shape, dtype=getattr(torch, dtype)) for name, dtype, shape in spec}
    if kind == "mapping":
        return ControlledMapping(tensors), tensors
    if kind == "module":
        root = torch.nn.Module()
        for name, t in tensors.items():
            *path, leaf = name.split(".")
            m = root
            for part in path:
                if not hasattr(m, part):
                    m.add_module(part, torch.nn.Module())
                m = getattr(m, part)
            if t.dtype.is_floating_point:
                p = torch.nn.Parameter(t)
                m.register_parameter(leaf, p)
                tensors[name] = p
            else:
                m.register_buffer(leaf, t)
        return root, tensors
    if kind == "tensordict":
        from tensordict import TensorDict

        td = TensorDict({}, batch_size=[])
        for name, t in tensors.items():
            td[tuple(name.split("."))] = t
        # TensorDict may store its own tensor object: fault injection must reach what it holds.
        return td, {name: td[tuple(name.split("."))] for name in tensors}
    raise ValueError(f"unknown target kind {kind!r}")
