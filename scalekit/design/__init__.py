"""Budget-aware design of a scaling sweep: which runs to train next.

The loop fit -> choose -> observe -> refit (:func:`propose`, :func:`replay`), with
the selection methods of :mod:`scalekit.design._methods`.
"""

from scalekit.design._estimator import SCALES, final_fit
from scalekit.design._loop import final_answer, propose, replay
from scalekit.design._methods import METHODS
from scalekit.design._pool import Pool, grid_pool, target_on_compute
from scalekit.design._result import DesignResult

__all__ = ["METHODS", "SCALES", "DesignResult", "Pool", "final_answer", "final_fit", "grid_pool",
           "propose", "replay", "target_on_compute"]
