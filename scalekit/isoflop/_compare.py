"""Side-by-side results of the three approaches, and how much of their spread each
approach-2 warning explains.

The spread of an exponent is the range of its estimates across approaches. For
each warning that flags some budgets, approach 2 is refitted without those
budgets; the fraction of the spread explained is ``1 - spread_without / spread``
(negative when leaving the flagged budgets out widens the spread).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from scalekit.isoflop._approach2 import CHECKS, IsoFLOPProfiles


def comparison_table(fitted: Mapping[str, object], target_compute: float | None = None
                     ) -> pd.DataFrame:
    """One row per approach: a, b with intervals, and N*, D* at ``target_compute``.

    ``fitted`` maps an approach name to a fitted estimator with ``params_law_`` and
    ``tokens_law_``.
    """
    rows = []
    for name, model in fitted.items():
        n_law, d_law = model.params_law_, model.tokens_law_
        row = {"approach": name, "a": n_law.exponent, "a_lo": n_law.exponent_ci[0],
               "a_hi": n_law.exponent_ci[1], "b": d_law.exponent, "b_lo": d_law.exponent_ci[0],
               "b_hi": d_law.exponent_ci[1], "k_N": n_law.coef, "k_D": d_law.coef}
        if target_compute is not None:
            for key, law in (("params", n_law), ("tokens", d_law)):
                lo, hi = law.interval(target_compute)
                row[key] = float(law.predict(target_compute))
                row[f"{key}_lo"], row[f"{key}_hi"] = float(lo[0]), float(hi[0])
        rows.append(row)
    return pd.DataFrame(rows)


def spread_explained(fitted: Mapping[str, object]) -> dict:
    """For each approach-2 warning: budgets flagged, a and b without them, spread explained."""
    profiles = next((m for m in fitted.values() if isinstance(m, IsoFLOPProfiles)), None)
    if profiles is None or len(fitted) < 2:
        return {}
    name2 = next(k for k, m in fitted.items() if m is profiles)
    out = {}
    for flag in CHECKS:
        flagged = int(profiles.budgets_["flags"].str.split(",").apply(lambda r, flag=flag: flag in r).sum())
        if not flagged:
            continue
        refit = profiles.refit_without(flag)
        entry = {"budgets": flagged}
        for key, index in (("a", 0), ("b", 1)):
            values = {k: (m.params_law_ if index == 0 else m.tokens_law_).exponent
                      for k, m in fitted.items()}
            spread = max(values.values()) - min(values.values())
            if refit is None:
                entry[f"{key}_without"], entry[f"{key}_spread_explained"] = None, None
                continue
            values[name2] = refit[index].exponent
            entry[f"{key}_without"] = refit[index].exponent
            entry[f"{key}_spread_explained"] = (
                1 - (max(values.values()) - min(values.values())) / spread if spread > 0
                else None)
        out[flag] = entry
    return out
