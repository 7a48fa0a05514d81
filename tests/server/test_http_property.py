"""The whole HTTP surface as one multi-tenant property (issue 32): hypothesis draws sequences of asks (JSON and
server-sent events), chat completions (plain and streamed), retrievals, graph questions (global, mixed, naming
another tenant's entities), table questions over the tools path (some naming another owner's table or column),
causal questions over chains whose ends every owner states, diagnoses by the admin with another tenant's text as
the expected answer, re-runs, replays, feedback, trace listings and pages, passages, compare, the knowledge-base
pages and uploads, by an admin key and three tenant keys. Every byte a tenant key gets back holds no other owner's
marker, entity name, chunk id, doc id or table name and no server path; another owner's id reads like one that does
not exist; nothing is a 5xx.

Size: RAGCLINIC_PROPERTY_REQUESTS (default 800: about 30 s of CPU here, within a minute on two cores); the bench runs
it at 10,000 (bench/tenant_property.py)."""

from __future__ import annotations

import os

import pytest

from .property_actions import run_property
from .property_world import open_world

REQUESTS = int(os.environ.get("RAGCLINIC_PROPERTY_REQUESTS", "800"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with open_world(tmp_path_factory.mktemp("property")) as w:
        yield w


def test_every_byte_a_tenant_gets_back_is_its_own(world):
    seconds = run_property(world, REQUESTS)
    report = world.report(seconds, examples=10)
    assert not world.leaks, f"{report}\nthe sequence that showed the first leak: {world.first_leak_actions}"
    # not vacuous: tenants were answered from their own documents, global questions went over the graph's
    # communities, the admin diagnosed, other owners' ids were probed, and documents were uploaded
    assert world.statuses[200] > REQUESTS // 2 and world.own > REQUESTS // 20 and world.graph > 0, report
    assert world.routes["POST /v1/diagnose"] + world.routes["POST /ui/diagnose"] > 0 and world.uploads > 0, report
    assert world.statuses[404] > 0, report
