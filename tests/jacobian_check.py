"""A check shared by the law tests: an analytic Jacobian against central differences."""

from __future__ import annotations

import numpy as np


def assert_jacobian_matches_central_differences(law, X, z, jacobian, *, step=1e-6):
    """Each column of ``jacobian`` (the law's d log L / d z at ``z``, fitting coordinates,
    one row per point of ``X``) equals the central difference of the log prediction."""
    for k in range(len(z)):
        up, down = z.copy(), z.copy()
        up[k] += step
        down[k] -= step
        numeric = (law.log_predict_fitting(X, up[None]) - law.log_predict_fitting(X, down[None]))
        np.testing.assert_allclose(jacobian[0, :, k], numeric[0] / (2 * step), rtol=1e-5,
                                   atol=1e-9, err_msg=law.param_names[k])
