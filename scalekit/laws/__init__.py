"""Law families as data (see :mod:`scalekit.laws._base`) and their registry."""

from scalekit.laws._base import Law, Param
from scalekit.laws._bnsl import bnsl
from scalekit.laws._chinchilla import optimum_coefficients
from scalekit.laws._class_count import class_count_error
from scalekit.laws._data_constrained import DEFAULT_RULE, data_constrained_law
from scalekit.laws._depth import DEPTH_WIDTH_DATA, count_depth, depth_regime, regime_resolved
from scalekit.laws._depth import TERMS as DEPTH_TERMS
from scalekit.laws._expression import SYMBOLS as EXPRESSION_SYMBOLS
from scalekit.laws._expression import check_expression, law_from_expression
from scalekit.laws._inference_k import INFERENCE_K
from scalekit.laws._m4 import from_limit, limit_bounds, limit_terms, m4_law, paper_bounds, to_limit
from scalekit.laws._multipower import PARAMS as MULTIPOWER_PARAMS
from scalekit.laws._multipower import ScheduleTerms, multipower_law, multipower_value_and_jacobian
from scalekit.laws._registry import available_laws, get_law, register_law
from scalekit.laws._shared_curve import shared_curve_law

__all__ = ["Law", "Param", "available_laws", "get_law", "law_from_expression", "register_law",
           "count_depth", "depth_regime", "regime_resolved",
           # for the other packages
           "DEFAULT_RULE", "DEPTH_TERMS", "DEPTH_WIDTH_DATA", "EXPRESSION_SYMBOLS", "INFERENCE_K",
           "MULTIPOWER_PARAMS", "ScheduleTerms", "bnsl", "check_expression", "class_count_error",
           "data_constrained_law", "m4_law", "multipower_law", "multipower_value_and_jacobian",
           "optimum_coefficients", "paper_bounds", "shared_curve_law",
           "from_limit", "limit_bounds", "limit_terms", "to_limit"]
