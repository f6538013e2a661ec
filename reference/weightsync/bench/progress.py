"""What a run prints while it runs: one progress line on a terminal, plain lines elsewhere.

On a terminal the case in progress and the last result share one line, rewritten in
place (a carriage return, then the line cleared), cut to the terminal's width so that it
never wraps; lines that stay (the start-up figures, a warning) clear it first. Anywhere
else (a log file, a pipe, CI) every case prints one plain line as it finishes, and the
status of the moment prints nothing.
"""

from __future__ import annotations

import shutil
import sys
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, tty: bool | None = None):
        self.stream = stream if stream is not None else sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self._shown = False  # a status line is on the screen

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self._shown = False

    def status(self, text: str) -> None:
        """What the run is doing now: the progress line on a terminal; nothing elsewhere."""
        if not self.tty:
            return
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
        self._clear()
        self.stream.write(text if len(text) <= width else text[:width - 3] + "...")
        self.stream.flush()
        self._shown = True

    def case(self, text: str) -> None:
        """A case that finished: the progress line on a terminal, one plain line elsewhere."""
        if self.tty:
            self.status(text)
        else:
            self.line(text)

    def line(self, text: str) -> None:
        """A line that stays."""
        self._clear()
        print(text, file=self.stream, flush=True)

    def done(self) -> None:
        """Clears the progress line, before the results."""
        self._clear()
        self.stream.flush()
