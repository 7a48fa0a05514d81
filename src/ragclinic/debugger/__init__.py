"""The six-layer debugger: counterfactual probes that name the layer that broke an answer."""

from ragclinic.debugger.base import LAYERS, Expectation, LayerReport  # noqa: F401
from ragclinic.debugger.debugger import Debugger, Diagnosis  # noqa: F401
