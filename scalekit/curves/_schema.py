"""Column roles of the tidy curve frame and how file columns map onto them.

A tidy curve frame has one row per logged point: ``run``, ``step``, optional
``compute`` (FLOPs), ``tokens`` and ``wall_time``, one or more metric columns
(``loss`` by default) and run-level columns (``params``, ``depth``, ``width``,
``classes``, ``k``, ``seed`` and free configuration), repeated on every row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from scalekit.errors import InputError

#: Columns that identify a point.
KEY_COLUMNS = ("run", "step")
#: Per-point numeric columns besides the metrics.
POINT_COLUMNS = ("compute", "tokens", "wall_time")
#: Run-level attributes stored as their own columns of the ``runs`` table.
RUN_COLUMNS = ("params", "tokens", "depth", "width", "classes", "k", "seed")
#: Run-level attributes that are not also per-point columns.
RUN_ONLY_COLUMNS = tuple(c for c in RUN_COLUMNS if c not in POINT_COLUMNS)
#: Run-level attributes holding whole numbers.
INTEGER_RUN_COLUMNS = ("depth", "width", "classes", "k", "seed")
#: Quantities whose logarithm laws take, so they must be positive.
LOG_COLUMNS = ("params", "tokens", "compute")
#: Numeric roles read from files for a law's inputs but not kept in the store's run table.
FILE_ONLY_COLUMNS = ("unique_tokens",)
#: Prefix under which free run configuration travels in exported files.
CONFIG_PREFIX = "config."
#: Prefix marking a metric whose name does not read as one (``samples``) in exported files.
METRIC_PREFIX = "metric."

#: Roles a file column can take, with the aliases recognised for each, in order of preference.
ALIASES: dict[str, tuple[str, ...]] = {
    "run": ("run", "run_name", "run_id", "model", "name"),
    "step": ("step", "_step", "iter", "iteration", "global_step", "steps"),
    "params": ("params", "N", "n_params", "num_params", "model_size", "Model Size",
               "parameters"),
    "tokens": ("tokens", "D", "num_tokens", "n_tokens", "training_tokens"),
    "compute": ("compute", "C", "flops", "FLOP", "Training FLOP", "training_flops",
                "compute_budget"),
    "loss": ("loss", "val_loss", "validation_loss"),
    "wall_time": ("wall_time", "walltime", "_runtime"),
    "depth": ("depth", "n_layers", "num_layers", "n_layer"),
    "width": ("width", "d_model", "n_embd", "hidden_size"),
    "classes": ("classes", "num_classes", "n_classes"),
    "k": ("k",),
    "seed": ("seed",),
    "unique_tokens": ("unique_tokens", "U", "unique", "unique_data"),
}
ROLES = tuple(ALIASES)

_METRIC_WORDS = re.compile(r"loss|acc|perplexity|ppl|error", re.IGNORECASE)


def normalise(name: str) -> str:
    """Return ``name`` folded for alias matching: lower case, runs of space/-/. as ``_``."""
    return re.sub(r"[\s\-.]+", "_", str(name).strip()).lower()


def is_metric_name(name: str) -> bool:
    """Whether ``name`` reads as a metric (loss, accuracy, perplexity, error)."""
    return bool(_METRIC_WORDS.search(str(name)))


def is_log_metric(name: str) -> bool:
    """Whether a metric called ``name`` is a loss-like quantity laws take the logarithm of."""
    return bool(re.search(r"loss|perplexity|ppl", str(name), re.IGNORECASE))


def resolve_roles(columns: Iterable[str], mapping: Mapping[str, str] | None, *,
                  metric: str = "loss", source: str | None = None) -> dict[str, str]:
    """Map roles to the file's columns.

    Parameters
    ----------
    columns : iterable of str
        The file's column names.
    mapping : mapping role -> column, optional
        Explicit choices; they win over aliases. A role that is the name of the
        requested ``metric`` is accepted as the ``loss`` role.
    metric : str
        Name of the metric column wanted; a column of that exact name (or with
        :data:`METRIC_PREFIX`) is the ``loss`` role, and when ``metric`` is
        ``"loss"`` its aliases are tried.

    Returns
    -------
    dict
        role -> column for every role found (a tuple of columns for a composite
        ``run``). Raises :class:`InputError` for an
        unknown role or a mapped column that the file lacks.
    """
    columns = [str(c) for c in columns]
    by_norm: dict[str, str] = {}
    for column in columns:
        by_norm.setdefault(normalise(column), column)
    roles: dict[str, str | tuple[str, ...]] = {}
    taken: set[str] = set()
    for role, column in (mapping or {}).items():
        role = "loss" if role == metric else role
        if role not in ALIASES:
            raise InputError(f"unknown role {role!r} in the column mapping; roles are "
                             + ", ".join(ROLES) + f" and the metric {metric!r}", source=source)
        parts = _run_parts(column, columns) if role == "run" else (column,)
        for part in parts:
            if part not in columns:
                raise InputError(f"the column mapping sends {role!r} to column {part!r}, which "
                                 "the file does not have (columns: " + ", ".join(columns) + ")",
                                 source=source, line=1, column=str(part))
        roles[role] = parts if len(parts) > 1 else parts[0]
        taken.update(parts)
    for role, aliases in ALIASES.items():
        if role in roles:
            continue
        if role == "loss":
            aliases = (metric, METRIC_PREFIX + metric) + (aliases if metric == "loss" else ())
        for alias in aliases:
            column = by_norm.get(normalise(alias))
            if column is not None and column not in taken:
                roles[role] = column
                taken.add(column)
                break
    return roles


def _run_parts(column: str | Sequence[str], columns: list[str]) -> tuple[str, ...]:
    """The columns naming a run: one, a sequence, or a comma-separated text."""
    if isinstance(column, str):
        if column in columns or "," not in column:
            return (column,)
        return tuple(part.strip() for part in column.split(","))
    return tuple(str(part) for part in column)


#: Roles a logged series (a TensorBoard tag, an MLflow or W&B metric key) can play.
SERIES_ROLES = ("step", "compute", "tokens", "wall_time")
#: Roles a logged run parameter (MLflow param, W&B config, hparam, Optuna param) can play.
ATTRIBUTE_ROLES = ("params", "tokens", "depth", "width", "classes", "k", "seed")


def series_role(name: str) -> str | None:
    """The point role a logged series plays by its name (``train/tokens`` is ``tokens``).

    The whole name or its last ``/`` part is matched against the aliases of
    :data:`SERIES_ROLES`; None when it plays none (a metric).
    """
    return _role_by_name(name, SERIES_ROLES, "/")


def attribute_role(name: str) -> str | None:
    """The run attribute a logged parameter names (``model.n_params`` is ``params``).

    The whole name or its last ``/`` or ``.`` part is matched against the
    aliases of :data:`ATTRIBUTE_ROLES`; None when it names none (free configuration).
    """
    return _role_by_name(name, ATTRIBUTE_ROLES, "/.")


def _role_by_name(name: str, roles: Sequence[str], separators: str) -> str | None:
    text = str(name).strip()
    tail = re.split("[" + re.escape(separators) + "]", text)[-1]
    for candidate in (text, tail):
        for role in roles:
            # "C" and "D" are aliases in a table's header; case matters for them
            if any(candidate == a if len(a) == 1 else normalise(candidate) == normalise(a)
                   for a in ALIASES[role]):
                return role
    return None
