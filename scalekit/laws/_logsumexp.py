"""Log-sum-exp of law terms, with the softmax weights that give its derivatives.

A law that is a sum of positive terms, ``y = sum_k exp(t_k)``, is evaluated in
the log space as ``log y = logsumexp_k t_k``; then ``d log y / d t_k`` is the
softmax weight of term ``k``. This is the form Hoffmann et al. (2022) fit.
"""

from __future__ import annotations

import numpy as np


def logsumexp_terms(*terms: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Return ``log(sum_k exp(terms[k]))`` and the softmax weight of each term.

    The terms broadcast against each other; the result and every weight have the
    broadcast shape. Stable for any finite terms (the largest is factored out).
    """
    terms = np.broadcast_arrays(*terms)
    top = np.maximum(terms[0], terms[1]) if len(terms) > 1 else terms[0].copy()
    for term in terms[2:]:
        np.maximum(top, term, out=top)
    top[~np.isfinite(top)] = 0.0
    shifted = [np.exp(term - top) for term in terms]
    total = shifted[0] + shifted[1] if len(shifted) > 1 else shifted[0].copy()
    for part in shifted[2:]:
        total += part
    inverse = 1.0 / total
    np.log(total, out=total)
    total += top
    return total, [np.multiply(part, inverse, out=part) for part in shifted]
