"""Exceptions shared by every part of scalekit.

The CLI maps :class:`InputError` to exit code 2 with its one-line message and
any other exception to exit code 1.
"""

from __future__ import annotations


class ScalekitError(Exception):
    """Base class of scalekit's own exceptions."""


class InputError(ScalekitError, ValueError):
    """Bad input from the user: a file, a column, a setting.

    Parameters
    ----------
    reason : str
        Why the input is rejected, as one sentence.
    source : str, optional
        The file (or store) the input came from.
    line : int, optional
        1-based line number in ``source`` (the header is line 1 in CSV files).
    column : str, optional
        The column the bad value sits in.
    """

    def __init__(self, reason: str, *, source: str | None = None,
                 line: int | None = None, column: str | None = None) -> None:
        self.reason = reason
        self.source = source
        self.line = line
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.source is not None:
            where.append(str(self.source) + (f":{self.line}" if self.line is not None else ""))
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        return (", ".join(where) + ": " if where else "") + self.reason


class NotFittedError(ScalekitError, ValueError, AttributeError):
    """Raised when an estimator is used before ``fit`` (as in scikit-learn)."""

    @classmethod
    def for_estimator(cls, estimator: object) -> NotFittedError:
        name = type(estimator).__name__
        return cls(f"This {name} instance is not fitted yet. Call 'fit' with "
                   "appropriate arguments before using this estimator.")


class ConvergenceWarning(UserWarning):
    """An optimiser stopped before its convergence criterion was met."""
