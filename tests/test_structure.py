"""The reference's shape, checked: one clock, and no module reaching into another's private names.

Every timer of the drivers (a lease, a join bound, the settle window, a frame bound, each
call's timeout) reads the clock a Sender or Receiver was given (`clock=`), so a test can
move time on by hand; that holds only while no module reads the system clock itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import weightsync

PACKAGE = Path(weightsync.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def test_only_clock_py_reads_the_system_clock():
    """time.monotonic (and time.time) appear in clock.py alone: everything else asks the clock it was given."""
    readers = []
    for path in MODULES:
        if path.name == "clock.py":
            continue
        for node in ast.walk(_tree(path)):
            if (isinstance(node, ast.Attribute) and node.attr in ("monotonic", "time", "monotonic_ns")
                    and isinstance(node.value, ast.Name) and node.value.id == "time"):
                readers.append(f"{path.relative_to(PACKAGE)}:{node.lineno} time.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "time":
                readers += [f"{path.relative_to(PACKAGE)}:{node.lineno} from time import {a.name}" for a in node.names
                            if a.name in ("monotonic", "time", "monotonic_ns")]
    assert not readers, f"read the injected clock (weightsync.clock) instead: {readers}"


def test_no_module_imports_another_modules_private_names():
    """A name that starts with `_` is its module's own: another module importing it couples the two silently."""
    found = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, f"make these public, or keep them in their module: {found}"


#: The sans-I/O core (docs/design.md): every rule of the protocol, no torch, no socket, no thread, no lock.
CORE = ("protocol", "receiving", "sending", "join", "profiles", "timers", "session", "limits", "clock", "wire", "messages",
        "errors")
#: What the core may import besides itself: the standard library's pure parts and the wire's encoding.
PURE = {"__future__", "collections", "dataclasses", "enum", "typing", "math", "struct", "sys", "time", "msgpack"}


def test_the_core_imports_nothing_that_does_io():
    """The core imports only the standard library's pure modules, msgpack and itself: no torch, socket,
    select, threading or os, so every rule in it runs in a unit test with bytes and times in."""
    found = []
    for name in CORE:
        for node in ast.walk(_tree(PACKAGE / f"{name}.py")):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                mods = [node.module] if node.module else [a.name for a in node.names]
                found += [f"{name}.py imports .{m}" for m in mods if m.split(".")[0] not in CORE]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [f"{name}.py imports {m}" for m in mods if m.split(".")[0] not in PURE]
    assert not found, found


#: The package's driver classes: each owns threads, channels or a protocol machine's I/O, and is used by
#: holding one and calling it, never by subclassing (one obvious place per concern; docs/design.md).
DRIVERS = {"Sender", "Hub", "Publisher", "Receiver", "Listener", "Channel", "Session"}


def driver_subclasses(paths) -> list[str]:
    """Every class in `paths` that names a driver class among its bases."""
    found = []
    for path in paths:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                         if isinstance(b, (ast.Name, ast.Attribute))]
                found += [f"{path.name}:{node.lineno} {node.name}({n})" for n in names if n in DRIVERS]
    return found


def test_no_class_inherits_a_driver_class():
    """A class that extends a driver shares its state and its lock by inheritance, and calls what only the
    subclass provides; compose instead: hold the driver and call it."""
    found = driver_subclasses(MODULES)
    assert not found, f"hold the driver and call it instead of inheriting it: {found}"


#: Modules the mutation run leaves out, and why; every other module of the package is mutated.
NOT_MUTATED = {
    "__init__.py": "names only",
    "__main__.py": "the command line",
    "demo.py": "the demo, run whole by the processes layer",
    "torchrl.py": "needs torchrl, which the mutation run does not install",
    "limits.py": "the spec's numbers, checked against the spec by tests/test_spec_tables.py",
    "clock.py": "the system clock, and the fake ones tests drive",
    "callbacks.py": "a weak reference to a method; no rule of the protocol",
}


def test_the_mutation_run_mutates_every_module_that_holds_a_rule():
    """conformance/mutation/cosmic-ray.toml names files that exist, and every module of the package but those
    NOT_MUTATED says why: a module split off or renamed must not leave the mutation score behind."""
    import tomllib

    root = PACKAGE.parent.parent
    config = tomllib.loads((root / "conformance" / "mutation" / "cosmic-ray.toml").read_text())
    listed = config["cosmic-ray"]["module-path"]
    missing = [p for p in listed if not (root / p).is_file()]
    assert not missing, f"cosmic-ray.toml names files that do not exist: {missing}"
    names = {Path(p).name for p in listed}
    left_out = [p.name for p in PACKAGE.glob("*.py") if p.name not in names and p.name not in NOT_MUTATED]
    assert not left_out, f"add these to cosmic-ray.toml's module-path, or to NOT_MUTATED with the reason: {left_out}"


#: The core's state enums: a driver that compares against their members decides what the core should (issue 42).
STATE_ENUMS = {"PeerState", "ReceiverState", "JoinState"}


def state_comparisons(paths) -> list[str]:
    """Every mention of a member of a core state enum (`PeerState.LIVE`) in `paths`."""
    found = []
    for path in paths:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in STATE_ENUMS:
                found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_no_driver_names_a_state_of_the_core():
    """A driver asks its machine a named question (`machine.live`, `machine.handle_to_give(...)`) and never
    compares states itself: every decision a state implies is the core's, unit-tested there."""
    drivers = [p for p in MODULES if p.parent == PACKAGE and p.stem not in CORE]
    assert {"sender", "receiver", "rendezvous"} <= {p.stem for p in drivers}, "the package's drivers are found"
    found = state_comparisons(drivers)
    assert not found, f"ask the machine (a property or function of the core, with its requirement) instead: {found}"


def profile_branches(paths) -> list[str]:
    """Every place in `paths` that tells the profiles apart itself: a key of the data plane spelled
    (`init.data_plane["lease_ms"]`), a data plane tested for None outside an assert, a `network` flag, an
    isinstance() of a profile or of a profile's source of versions, or a profile compared with `UNIX` or `NETWORK`."""
    found = []
    for path in paths:
        tree = _tree(path)
        asserted = {id(n) for a in ast.walk(tree) if isinstance(a, ast.Assert) for n in ast.walk(a)}
        for node in ast.walk(tree):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "data_plane":
                found.append(f"{where} .data_plane[...]")
            elif isinstance(node, ast.Attribute) and node.attr == "network" or \
                    isinstance(node, (ast.Name, ast.arg)) and getattr(node, "id", getattr(node, "arg", "")) == "network":
                found.append(f"{where} network")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                    and ast.unparse(node.args[1]).endswith(("NetworkPending", "ChannelPending", "Profile")):
                found.append(f"{where} {ast.unparse(node)}")
            elif isinstance(node, ast.Compare) and id(node) not in asserted:
                sides = [node.left, *node.comparators]
                if any(isinstance(s, ast.Attribute) and s.attr == "data_plane" for s in sides):
                    found.append(f"{where} data_plane compared")
                if any(isinstance(s, (ast.Name, ast.Attribute)) and getattr(s, "id", getattr(s, "attr", "")) in
                       ("UNIX", "NETWORK") for s in sides):
                    found.append(f"{where} profile compared")
    return found


def test_no_driver_tells_the_profiles_apart_itself():
    """Unix or network is decided once, by the core's profiles (profiles.py): a driver asks the profile of the peer
    in front of it, or picks that profile's I/O by its class, and reads the data plane's typed fields."""
    drivers = [p for p in MODULES if p.parent == PACKAGE and p.stem not in CORE]
    found = profile_branches(drivers)
    assert not found, f"ask the profile (weightsync.profiles) instead: {found}"


def test_no_module_of_the_package_passes_400_lines():
    """Issue 42: a module that grows past 400 lines holds more than one job; split it by what it holds (the
    benchmark, a program of its own, is left out)."""
    long = {p.relative_to(PACKAGE).as_posix(): n for p in MODULES
            if "bench" not in p.relative_to(PACKAGE).parts and (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"modules over 400 lines: {long}"
