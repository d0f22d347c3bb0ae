"""A law's inputs from a user's mapping, by their column names or their usual symbols.

``params``, ``tokens`` and ``compute`` may be given as ``N``, ``D`` and ``C``
(Kaplan et al. 2020; Hoffmann et al. 2022), so ``fit_law("chinchilla",
{"N": n, "D": d}, loss)`` and ``result.predict({"N": n, "D": d})`` work.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.errors import InputError
from scalekit.laws import EXPRESSION_SYMBOLS

#: The usual symbol of each input column (those of the expression language).
SYMBOLS = {column: symbol for symbol, column in EXPRESSION_SYMBOLS.items() if symbol != column}


def law_inputs(law, X: Mapping) -> dict[str, np.ndarray]:
    """``{input: float array}`` for every input of ``law``, each looked up by name, then symbol.

    Raises
    ------
    InputError
        When an input is given by neither, or by both.
    """
    inputs = {}
    for name in law.inputs:
        symbol = SYMBOLS.get(name)
        given = [key for key in (name, symbol) if key is not None and key in X]
        if not given:
            also = f" (or {symbol!r})" if symbol else ""
            raise InputError(f"law {law.name!r} needs input {name!r}{also}, which X does not have")
        if len(given) == 2:
            raise InputError(f"X gives input {name!r} twice, as {name!r} and as {symbol!r}")
        inputs[name] = np.asarray(X[given[0]], dtype=float)
    return inputs
