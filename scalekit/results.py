"""The result protocol every analysis result follows.

A result has ``to_dict()`` / ``from_dict()`` (plain JSON-able data and back),
``summary()`` (a plain-text report in fixed sections, the shape of lmfit's
``fit_report``), a one-line ``repr`` (what it is, its objective, how many
points) and ``_repr_html_`` for notebooks. :class:`ResultProtocol` derives the
last three from two small methods a result writes: ``_summary_sections()`` and
``_repr_fields()``; ``to_frame()`` is the main table as a tidy DataFrame (a
default here, each result with a table writes its own). The JSON envelope of a report wraps ``to_dict()``
(:func:`scalekit.serialise.envelope`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from scalekit.formatting import Section, format_number, sections_html, sections_text


class ResultProtocol:
    """Mixin: ``summary()``, ``__repr__`` and ``_repr_html_`` from a result's own sections.

    A dataclass using it is declared ``@dataclass(repr=False)`` so the one-line
    ``repr`` is kept.
    """

    def _summary_title(self) -> str:
        return type(self).__name__

    def _summary_sections(self) -> Sequence[Section]:
        raise NotImplementedError

    def _repr_fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_frame(self):
        """The result's main table as a tidy :class:`pandas.DataFrame`.

        This default is one row of the plain values (numbers, strings, flags) of
        ``to_dict()``: the answer of a result that has no table of its own. A result
        with a main table (parameters, budgets, forecasts, replay rows …) returns
        that table instead.
        """
        import pandas as pd

        data = self.to_dict()
        return pd.DataFrame([{k: v for k, v in data.items()
                              if v is None or isinstance(v, (bool, int, float, str))}])

    def summary(self) -> str:
        """The fixed-section plain-text report."""
        return sections_text(self._summary_title(), self._summary_sections())

    def _repr_html_(self) -> str:
        return sections_html(self._summary_title(), self._summary_sections())

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v if isinstance(v, str) else format_number(v)}"
                           for k, v in self._repr_fields().items())
        return f"{type(self).__name__}({fields})"


class FlatResult(ResultProtocol):
    """A result whose dataclass fields are plain values: ``to_dict`` is every field,
    ``from_dict`` the inverse (lists back to tuples where a field is a tuple)."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        values = {}
        for f in dataclasses.fields(cls):
            value = data[f.name]
            if str(f.type).startswith("tuple") and value is not None:
                value = tuple(value)
            values[f.name] = value
        return cls(**values)


def frame_from_records(records: list[dict[str, Any]]):
    """A DataFrame from ``to_dict(orient="records")`` rows read back from strict JSON.

    JSON ``null`` (a non-finite float written by :func:`scalekit.serialise.dumps`) reads
    back as NaN, also in a column that is null throughout.
    """
    import numpy as np
    import pandas as pd

    return pd.DataFrame(records).fillna(np.nan).infer_objects()


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value
