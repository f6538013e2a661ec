"""What each shipped mutant patches or overrides that the reference does not have: a stale seam.

    python tests/mutant_seams.py PACKAGE NAME ...   (from the repository's root; prints a JSON object)

A mutant overrides a private method of a reference class, or assigns a module's or a class's attribute. When
the reference renames that method, the mutant's bug is silently gone, and the slow layer would report "the suite
misses a bug" instead of "the mutant is stale". Found here by name: an attribute the import added to a module or
class of the package, or a method of a mutant's subclass that no base has and the mutant itself never calls
(a helper it calls is its own).
"""
import importlib
import inspect
import json
import pkgutil
import sys

import weightsync

package, names = sys.argv[1], [f"{sys.argv[1]}.{n}" for n in sys.argv[2:]]
sys.path.insert(0, ".")
for info in pkgutil.walk_packages(weightsync.__path__, "weightsync."):
    if not info.name.startswith("weightsync.bench"):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as e:  # weightsync.torchrl without torchrl: an optional extra, not a seam
            if e.name is None or e.name.startswith("weightsync"):
                raise


def ours():
    """Every module of the package and every class defined in one, with the names each holds now."""
    seen = {}
    for mod in [m for n, m in sys.modules.items() if n == "weightsync" or n.startswith("weightsync.")]:
        seen[mod.__name__] = (mod, set(vars(mod)))
        for obj in vars(mod).values():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__:
                seen[f"{mod.__name__}.{obj.__qualname__}"] = (obj, set(vars(obj)))
    return seen


stale = {}
for name in names:
    before = ours()
    mutant = importlib.import_module(name)
    source = inspect.getsource(mutant)
    found = [f"{where}.{attr}" for where, (obj, had) in before.items() for attr in sorted(set(vars(obj)) - had)]
    for cls in vars(mutant).values():
        if not (inspect.isclass(cls) and cls.__module__ == name):
            continue
        bases = [b for b in cls.__mro__[1:] if b.__module__.startswith("weightsync")]
        if not bases:
            continue
        for attr, value in vars(cls).items():
            if (callable(value) and not attr.startswith("__") and not any(hasattr(b, attr) for b in bases)
                    and source.count(attr) < 2):
                found.append(f"{name}.{cls.__name__}.{attr} (overrides nothing in {bases[0].__qualname__})")
    if found:
        stale[name] = found
print(json.dumps(stale))
