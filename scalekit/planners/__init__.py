"""Planners that turn a fitted law into a decision: model shape, tree of steps, samples.

- :mod:`scalekit.planners.depth`: loss-optimal width and depth for a parameter budget.
- :mod:`scalekit.planners.cot`: the least-error tree of chain-of-thought steps.
- :mod:`scalekit.planners.inference_k`: how many inference-time samples, at which temperature.
"""
