"""Budgeted allocation of a sweep's compute: Successive Halving and Hyperband guided by
learning-curve surrogates, replayed on complete curves, planned, or run with trainers.
"""

from scalekit.allocate._baselines import BASELINES
from scalekit.allocate._budget import PF_DAY, parse_budget
from scalekit.allocate._commit import CommitLoop, CommitPolicy
from scalekit.allocate._metrics import best_final_loss
from scalekit.allocate._synthetic import early_leader_frame, early_leader_sweep, ladder_sweep
from scalekit.allocate._toy import SyntheticTrainer
from scalekit.allocate._engine import Advance, Allocation, HalvingLoop, successive_halving
from scalekit.allocate._forecasters import (SURROGATES, JointForecaster, PerCurveForecaster, SweepForecaster,
                                            make_forecaster)
from scalekit.allocate._next_actions import Plan, plan_next
from scalekit.allocate._policies import (ALLOCATION_POLICIES, POLICIES, ForecastPolicy, FrontierPolicy,
                                         LossPolicy, Policy, PromotionContext, get_policy)
from scalekit.allocate._replay import ReplayResult, allocate, fit_bracket, replay
from scalekit.allocate._runner import AllocationRunResult, candidate_sweep, run_allocation
from scalekit.allocate._schedules import (Hyperband, Rung, SuccessiveHalving, check_eta, format_rung_table,
                                          rung_count, rung_resources)
from scalekit.allocate._state import AllocationState
from scalekit.allocate._sweep import RESOURCES, Curve, Sweep, sweep_from_frame

__all__ = [
    "PF_DAY", "parse_budget", "Advance", "Allocation", "HalvingLoop", "successive_halving",
    "JointForecaster", "PerCurveForecaster", "SweepForecaster", "make_forecaster", "Plan",
    "plan_next", "POLICIES", "ForecastPolicy", "FrontierPolicy", "LossPolicy", "Policy",
    "PromotionContext", "get_policy", "ReplayResult", "allocate", "fit_bracket", "replay",
    "AllocationRunResult", "run_allocation", "Hyperband", "Rung", "SuccessiveHalving",
    "format_rung_table", "rung_count", "Curve", "Sweep", "sweep_from_frame",
    "best_final_loss", "early_leader_frame", "early_leader_sweep", "ladder_sweep",
    "SyntheticTrainer",
    "ALLOCATION_POLICIES", "AllocationState", "candidate_sweep", "check_eta",
    "CommitLoop", "CommitPolicy", "RESOURCES", "SURROGATES", "rung_resources", "BASELINES",
]
