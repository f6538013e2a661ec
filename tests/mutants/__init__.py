"""Deliberately broken implementations: each is the reference with one requirement broken.

Every module re-exports the whole binding (and CAPABILITIES) with one small
change, and names the requirement it breaks in its docstring and in
`VIOLATES`. tests/test_conformance_mutants.py runs the conformance suite on
each and expects it to fail naming that requirement; a mutant that survives
is a gap in the suite (strengthen the suite, never drop the mutant).
"""
