"""The one table of layers (issue 54, trace/layers.py): every reference in it resolves to what it names, and every
reader — the runner, the trace codec, the debugger, telemetry, metrics, the doctor's router — takes its layers from
it, so a layer is defined in one place."""

from __future__ import annotations

import inspect
from dataclasses import fields

from ragclinic.debugger.debugger import PROBES
from ragclinic.doctor.router import ORDER, ROUTES
from ragclinic.doctor.symptoms import DETECTORS
from ragclinic.doctor.treatments import TREATMENTS
from ragclinic.pipeline.runner import LAYERS as RUNNER_LAYERS
from ragclinic.server.telemetry import _LAYER_KIND
from ragclinic.trace import codec
from ragclinic.trace.layers import BY_NAME, LAYERS, QUERY_LAYERS, SPECS, resolve
from ragclinic.trace.model import QUERY_LAYERS as MODEL_QUERY_LAYERS


def test_every_reference_in_the_table_resolves():
    for s in SPECS:
        probe = resolve(s.probe)  # every built-in layer has its probe
        assert callable(probe) and list(inspect.signature(probe).parameters) == ["case"], s.name
        if s.query:
            layer = resolve(s.function)
            assert list(inspect.signature(layer).parameters) == ["ctx", "state"], s.name
            assert s.input is not None and s.output is not None and hasattr(s.output, "apply"), s.name
        for treatments in s.routes.values():
            assert set(treatments) <= set(TREATMENTS.names()), (s.name, treatments)


def test_the_readers_take_their_layers_from_the_table():
    assert LAYERS == ("parse", "chunk", "retrieve", "scope", "gate", "generate")
    assert QUERY_LAYERS == MODEL_QUERY_LAYERS == tuple(RUNNER_LAYERS) == ("retrieve", "scope", "gate", "generate")
    assert {k: v.__name__ for k, v in RUNNER_LAYERS.items()} == {n: n for n in QUERY_LAYERS}
    assert tuple(PROBES) == LAYERS and PROBES["retrieve"].__name__ == "probe_retrieve"
    assert all(_LAYER_KIND[s.name] == s.span_kind for s in SPECS) and _LAYER_KIND["retrieve"] == "RETRIEVER"
    assert ROUTES == {k: v for s in SPECS for k, v in s.routes.items()}


def test_each_symptom_is_routed_by_the_layer_its_detector_names():
    layer_of = {d.name: d.layer for d in (DETECTORS.create(n) for n in DETECTORS.names())}
    for s in SPECS:
        for symptom in s.routes:
            assert layer_of.get(symptom) == s.name, (symptom, layer_of.get(symptom), s.name)
    assert set(ORDER) == set(ROUTES), "the router's priority ORDER names every routed symptom, no other"


def test_a_span_round_trips_through_the_codec_by_its_specs_types():
    for name in QUERY_LAYERS:
        s = BY_NAME[name]
        blank = s.input.from_dict({})
        assert isinstance(codec.decode_input(name, codec.encode_input(name, blank)), s.input)
        assert {f.name for f in fields(s.input)} == set(codec.encode_input(name, blank))
