"""`ingest --graph [fast|model]` and `kb graph [--entity] [--graphml] [--json]` (issue 20 §1, §4)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app, with_optional_values

from graph.helpers import write_docs


@pytest.fixture
def kb(tmp_path):
    docs = write_docs(tmp_path / "docs")
    r = CliRunner().invoke(app, ["ingest", str(docs), "--kb", str(tmp_path / "kb"), "--embedder", "fake", "--graph",
                                 "fast", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["graph"]["mode"] == "fast" and data["graph"]["extracted"] == data["chunks"]
    assert data["graph"]["communities"]["communities"] >= 1
    return tmp_path / "kb"


def test_kb_graph_json_has_size_top_entities_and_communities(kb):
    r = CliRunner().invoke(app, ["kb", "graph", "--kb", str(kb), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["mode"] == "fast"
    assert data["size"]["entities"] > 5 and data["size"]["chunks_pending"] == 0
    assert {"entity", "name", "type", "chunks", "documents", "degree", "community", "hub"} <= set(
        data["top_entities"][0])
    c = data["communities"][0]
    assert {"id", "level", "title", "size", "summary", "points", "members"} <= set(c)
    assert "entity" not in data


def test_kb_graph_entity_shows_its_neighbourhood(kb):
    r = CliRunner().invoke(app, ["kb", "graph", "--kb", str(kb), "--entity", "Piotr Nowak", "--json"])
    data = json.loads(r.stdout)["entity"]
    assert data["entity"] == "piotr nowak" and data["chunks"]
    names = {n["name"] for n in data["neighbours"]}
    assert "Gdynia Plant" in names and all(n["chunks"] for n in data["neighbours"])
    partial = json.loads(CliRunner().invoke(app, ["kb", "graph", "--kb", str(kb), "--entity", "nowak",
                                                  "--json"]).stdout)["entity"]
    assert partial["entity"] == "piotr nowak"


def test_kb_graph_unknown_entity_and_a_kb_without_graph_are_clear_errors(kb, tmp_path):
    r = CliRunner().invoke(app, ["kb", "graph", "--kb", str(kb), "--entity", "Nobody Atall"])
    assert r.exit_code == 2 and "no entity named 'Nobody Atall'" in r.output
    docs = write_docs(tmp_path / "plain-docs")
    CliRunner().invoke(app, ["ingest", str(docs), "--kb", str(tmp_path / "plain"), "--embedder", "fake"])
    r = CliRunner().invoke(app, ["kb", "graph", "--kb", str(tmp_path / "plain")])
    assert r.exit_code == 2 and "--graph" in r.output


def test_kb_graph_exports_graphml(kb, tmp_path):
    out = tmp_path / "g.graphml"
    r = CliRunner().invoke(app, ["kb", "graph", "--kb", str(kb), "--graphml", str(out), "--json"])
    meta = json.loads(r.stdout)["graphml"]
    root = ET.parse(out).getroot()
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    nodes = root.findall(".//g:node", ns)
    edges = root.findall(".//g:edge", ns)
    assert len(nodes) == meta["nodes"] > 0 and len(edges) == meta["edges"] > 0
    keys = {k.get("attr.name") for k in root.findall("g:key", ns)}
    assert {"label", "type", "community", "weight"} <= keys


def test_graph_without_a_value_means_fast_and_a_typo_is_named(tmp_path):
    docs = write_docs(tmp_path / "docs")
    assert with_optional_values(["ingest", str(docs), "--graph"]) == ["ingest", str(docs), "--graph", "fast"]
    assert with_optional_values(["ingest", "--graph", str(docs)]) == ["ingest", "--graph", "fast", str(docs)]
    assert with_optional_values(["ingest", "--graph", "--json"]) == ["ingest", "--graph", "fast", "--json"]
    assert with_optional_values(["ingest", "--graph", "model", "x"]) == ["ingest", "--graph", "model", "x"]
    r = CliRunner().invoke(app, ["ingest", str(docs), "--kb", str(tmp_path / "kb"), "--graph", "fancy"])
    assert r.exit_code == 2 and "fast, model" in r.output
