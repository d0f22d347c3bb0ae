"""``scalekit plan --law data_constrained``: the optimum under a limit of unique data.

See :mod:`scalekit.planners._data_constrained`; the law is fitted as ``scalekit plan``
fits any law, from a file with a ``unique_tokens`` (``U``) column.
"""

from __future__ import annotations


LAW = "data_constrained"
#: Bootstrap draws of the law the plan is repeated for (its intervals).
MAX_DRAWS = 200


def check_options(law: str | None, *, compute, unique_tokens, target_loss) -> None:
    """Before any work: the data-constrained plan needs --compute and --unique-tokens,
    and --unique-tokens needs that law."""
    from scalekit.errors import InputError

    if law != LAW:
        if unique_tokens is not None:
            raise InputError(f"--unique-tokens plans with --law {LAW} only")
        return
    if compute is None or unique_tokens is None:
        raise InputError(f"--law {LAW} plans need --compute C and --unique-tokens U")
    if target_loss is not None:
        raise InputError(f"--target-loss is not planned for --law {LAW}; give --compute")
    if not unique_tokens > 0:
        raise InputError(f"The value of `--unique-tokens` is {unique_tokens!r}, but must be > 0.")


def body(result, notes, read, *, compute: float, unique_tokens: float, compare,
         k: float) -> dict:
    """The plan report of the data-constrained law: the law, the plan and the diagnostics."""
    from scalekit.planners import plan_data_constrained

    draws = result.bootstrap_values
    notes = list(notes)
    if draws is not None and len(draws) > MAX_DRAWS:
        notes.append(f"plan intervals from the first {MAX_DRAWS} of {len(draws)} bootstrap draws")
        draws = draws[:MAX_DRAWS]
    plan = plan_data_constrained(result.values, compute, unique_tokens, compare=compare,
                                 flops_per_param_token=k, draws=draws, ci_level=result.ci_level)
    diagnostics = list(read) + list(result.diagnostics)
    return {"notes": notes, "law": {"name": result.law.name, **result.values},
            "law_ci": {key: list(v) for key, v in result.ci.items()},
            "data_constrained": plan.to_dict(), "summary": plan.summary(),
            "diagnostics": [d.to_dict() for d in diagnostics],
            "warnings": [d.message for d in diagnostics if d.severity != "info"]}


def show(report: dict) -> None:
    from .common import print_renderable

    print_renderable(report["summary"])
    for note in report["notes"]:
        print_renderable(f"note: {note}")
    for d in report["diagnostics"]:
        print_renderable(f"{d['severity']}: {d['message']}")
