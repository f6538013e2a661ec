"""Deliberately broken implementations: each is the reference with one requirement broken.

Every module re-exports the whole binding (and CAPABILITIES) and breaks one
requirement by overriding one small seam of the reference (a small method, a
class attribute, the class of one object it makes), never by copying a large
method, so that it keeps fitting the reference as the reference changes. Each
module declares:

- `VIOLATES`: the requirement ID it breaks, or a tuple of IDs when the one bug
  honestly breaks several (a torn write breaks SLOT-2 and CONS-1); its docstring
  names each of them and the seam it overrides;
- `KILLED_BY`: the conformance test(s) expected to kill it, which run first so
  that a killed mutant's run stops early (tests/mutants/_first.py); the rest of
  the suite still runs if they do not kill it.

tests/test_conformance_mutants.py runs the conformance suite on each and
expects it to fail naming at least one of its IDs; a mutant that survives is a
gap in the suite (strengthen the suite, never drop the mutant).
"""
