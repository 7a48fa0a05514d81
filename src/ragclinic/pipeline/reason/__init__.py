"""Thinking before answering (issue 17), as steps of the pipeline's own layers: the gate's path choice and the
ambiguity step (route.py, ambiguity.py), the tools path in strict mode (plan.py, toolbox.py, planner.py) and
causal ranking and chains (causal.py). A plain question takes the direct path and pays nothing for these."""
