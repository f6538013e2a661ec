"""Shims of one role each (API-12): the reference's Sender alone, or its Receiver alone, for the suite's one-role runs."""
