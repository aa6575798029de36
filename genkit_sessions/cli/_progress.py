"""A progress bar on stderr when stderr is a terminal, and nothing at all when it is not (piped, a file)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """``[#####.....]  52%  5,200/10,000 snapshots  1,830/s`` (no bar without a total), redrawn at most
    ten times a second; :meth:`close` ends the line. Silent unless ``stream`` is a terminal or ``force``."""

    def __init__(
        self, label: str, total: int | None = None, *, stream: TextIO | None = None, force: bool = False
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.label = label
        self.total = total
        self.done = 0
        self._start = time.monotonic()
        self._drawn = 0.0

    def __call__(self, count: int) -> None:
        """Count ``count`` more items done."""
        self.done += count
        if self.enabled and time.monotonic() - self._drawn >= 0.1:
            self._draw()

    def _draw(self) -> None:
        self._drawn = time.monotonic()
        rate = self.done / max(self._drawn - self._start, 1e-9)
        if self.total:
            share = min(self.done / self.total, 1.0)
            filled = int(share * 30)
            head = f"[{'#' * filled}{'.' * (30 - filled)}] {share:4.0%}  {self.done:,}/{self.total:,}"
        else:
            head = f"{self.done:,}"
        self.stream.write(f"\r{head} {self.label}  {rate:,.0f}/s ")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final count and end the line."""
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
