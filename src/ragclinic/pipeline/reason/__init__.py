"""Reasoning paths the gate routes a question to (issue 17): ``tools`` (a plan over sql / calculator / search,
planner.py), with routing rules in route.py. Plain questions take the direct path and pay nothing for these."""
