"""The weightsync conformance suite: `pytest conformance --impl=MODULE` (docs/conformance.md)."""
