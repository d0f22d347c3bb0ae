"""A linear probe: how well a frozen model's features separate the classes of a data set."""

from __future__ import annotations

import numpy as np

#: Ridge penalty per training sample, on standardised features.
PENALTY = 1e-3


def probe_accuracy(train_features, train_labels, test_features, test_labels, *,
                   classes: int, penalty: float = PENALTY) -> float:
    """Accuracy on the test set of a one-vs-rest ridge classifier fitted in closed form.

    Features are standardised with the training set's mean and standard deviation; the
    classifier solves ``(XᵀX + penalty·n·I) W = XᵀY`` for one-hot targets ``Y`` (the
    intercept unpenalised), in float64, and predicts the class of the largest score. There
    is no randomness: the same features give the same accuracy.

    Parameters
    ----------
    train_features, test_features : array of shape (n, d)
    train_labels, test_labels : integer array of shape (n,), in ``[0, classes)``
    classes : int
        Number of classes.
    penalty : float
        Ridge penalty per training sample.
    """
    x = np.asarray(train_features, dtype=np.float64)
    t = np.asarray(test_features, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    x, t = (x - mean) / scale, (t - mean) / scale
    design = np.hstack([x, np.ones((len(x), 1))])
    ridge = penalty * len(x) * np.eye(design.shape[1])
    ridge[-1, -1] = 0.0
    targets = np.eye(classes)[np.asarray(train_labels, dtype=np.int64)]
    weights = np.linalg.solve(design.T @ design + ridge, design.T @ targets)
    scores = np.hstack([t, np.ones((len(t), 1))]) @ weights
    return float(np.mean(scores.argmax(axis=1) == np.asarray(test_labels)))
