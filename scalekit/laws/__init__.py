"""Law families as data (see :mod:`scalekit.laws.base`) and their registry."""

from scalekit.laws.base import Law, Param
from scalekit.laws.depth import count_depth, depth_regime, regime_resolved
from scalekit.laws.expression import law_from_expression
from scalekit.laws.registry import available_laws, get_law, register_law

__all__ = ["Law", "Param", "available_laws", "get_law", "law_from_expression", "register_law",
           "count_depth", "depth_regime", "regime_resolved"]
