"""Trainers for the fault tests: the toy trainer, slowed down, logging every call to a file.

A module of its own (not a test file) so that spawned worker processes can import it.
"""

from __future__ import annotations

import dataclasses
import os
import time

from scalekit.allocate._toy import SyntheticTrainer


@dataclasses.dataclass
class CountingTrainer(SyntheticTrainer):
    """Appends ``start|done pid run start stop`` to ``log`` around each advance."""

    log: str = ""
    delay: float = 0.0

    def _note(self, what: str, run: str, start: float, stop: float) -> None:
        with open(self.log, "a") as out:  # one short append per line: lines never interleave
            out.write(f"{what} {os.getpid()} {run} {start!r} {stop!r}\n")

    def advance(self, run, start, stop):
        self._note("start", run, start, stop)
        time.sleep(self.delay)
        points = super().advance(run, start, stop)
        self._note("done", run, start, stop)
        return points


def calls(log: str, what: str = "start") -> list[tuple[str, float, float]]:
    """The advances logged as ``what`` in ``log``: (run, start, stop), in order."""
    if not os.path.exists(log):
        return []
    with open(log) as handle:
        rows = [line.split() for line in handle.read().splitlines()]
    return [(r[2], float(r[3]), float(r[4])) for r in rows if r[0] == what]


def pids(log: str) -> set[int]:
    """The processes that ran an advance."""
    return {int(line.split()[1]) for line in open(log).read().splitlines()}
