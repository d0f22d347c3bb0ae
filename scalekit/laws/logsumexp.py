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
    broadcast shape.
    """
    terms = np.broadcast_arrays(*terms)
    top = terms[0]
    for term in terms[1:]:
        top = np.maximum(top, term)
    top = np.where(np.isfinite(top), top, 0.0)
    shifted = [np.exp(term - top) for term in terms]
    total = shifted[0]
    for part in shifted[1:]:
        total = total + part
    return top + np.log(total), [part / total for part in shifted]
