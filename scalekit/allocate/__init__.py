"""Budgeted allocation of a sweep's compute: Successive Halving and Hyperband guided by
learning-curve surrogates, replayed on complete curves, planned, or run with trainers.
"""

from scalekit.allocate.budget import PF_DAY, parse_budget
from scalekit.allocate.commit import CommitLoop, CommitPolicy
from scalekit.allocate.metrics import best_final_loss
from scalekit.allocate.synthetic import early_leader_frame, early_leader_sweep
from scalekit.allocate.toy import SyntheticTrainer
from scalekit.allocate.engine import Advance, Allocation, HalvingLoop, successive_halving
from scalekit.allocate.forecasters import (SURROGATES, JointForecaster, PerCurveForecaster,
                                           SweepForecaster, make_forecaster)
from scalekit.allocate.next_actions import Plan, plan_next
from scalekit.allocate.policies import (ALLOCATION_POLICIES, POLICIES, ForecastPolicy,
                                        FrontierPolicy, LossPolicy, Policy, PromotionContext,
                                        get_policy)
from scalekit.allocate.replay import ReplayResult, allocate, fit_bracket, replay
from scalekit.allocate.runner import AllocationRunResult, candidate_sweep, run_allocation
from scalekit.allocate.schedules import (Hyperband, Rung, SuccessiveHalving, check_eta,
                                         format_rung_table, rung_count, rung_resources)
from scalekit.allocate.state import AllocationState
from scalekit.allocate.sweep import RESOURCES, Curve, Sweep, sweep_from_frame

__all__ = [
    "PF_DAY", "parse_budget", "Advance", "Allocation", "HalvingLoop", "successive_halving",
    "JointForecaster", "PerCurveForecaster", "SweepForecaster", "make_forecaster", "Plan",
    "plan_next", "POLICIES", "ForecastPolicy", "FrontierPolicy", "LossPolicy", "Policy",
    "PromotionContext", "get_policy", "ReplayResult", "allocate", "fit_bracket", "replay",
    "AllocationRunResult", "run_allocation", "Hyperband", "Rung", "SuccessiveHalving",
    "format_rung_table", "rung_count", "Curve", "Sweep", "sweep_from_frame",
    "best_final_loss", "early_leader_frame", "early_leader_sweep", "SyntheticTrainer",
    "ALLOCATION_POLICIES", "AllocationState", "candidate_sweep", "check_eta",
    "CommitLoop", "CommitPolicy", "RESOURCES", "SURROGATES", "rung_resources",
]
