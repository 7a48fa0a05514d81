"""The four worked examples of docs/architecture.md ("Adding things"), run as the page writes them (issues 34, 54).

Each python block there whose first line is ``# example: NAME — …`` is taken from the page as it is and run for real:
the retriever answers a question through the Clinic with ``retriever="keyword"``; the treatment (with the page's
routes entry in the layer table) is tried by the doctor on a compound question; the query layer runs in a copy of
the source with its module written and its entry put in the layer table, its span recorded and its trace replayed;
the route answers through the app ``create_app`` builds.
Registries are global, so each example runs in a Python process of its own (this file run as a script): nothing it
registers reaches another test (tests/pipeline/retrieve/test_retrievers.py lists the built-in retrievers exactly).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic import Clinic, Question
from ragclinic.config import Settings
from ragclinic.doctor import Doctor
from ragclinic.doctor.router import ROUTES
from ragclinic.doctor.treatments import TREATMENTS
from ragclinic.pipeline.retrieve import RETRIEVERS
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.store import load_trace

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BLOCK = re.compile(r"```python\n(# example: (?P<name>[a-z ]+?) —[^\n]*\n.*?)```", re.S)
Q_RFR = "What is the risk-free rate?"


def examples() -> dict[str, str]:
    """The page's marked python blocks, by name."""
    return {m.group("name"): m.group(1) for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def load_example(name: str) -> types.ModuleType:
    """The block run as a module of its own (as the file the page names would be imported)."""
    module = types.ModuleType(f"architecture_example_{name.replace(' ', '_')}")
    sys.modules[module.__name__] = module
    exec(compile(examples()[name], f"docs/architecture.md: {name}", "exec"), module.__dict__)
    return module


# ---------------------------------------------------------------------------------------------- the checks
def check_retriever(tmp: Path) -> None:
    load_example("retriever")
    assert "keyword" in RETRIEVERS.names()
    build_kb(tmp, BOND_DOCS).close()
    with Clinic.open(tmp / "kb", llm="none", retriever="keyword") as clinic:
        seen = clinic.answer(Question(Q_RFR, doctor=False, cache=False))
        assert "risk-free rate is the return on an investment" in seen.answer.text, seen.answer.text
        out = seen.trace.span("retrieve").output
        assert out.retriever == "keyword" and out.hits
        assert {s.retriever for h in out.hits for s in h.sources} == {"keyword"}
        # the scope's pre-filter reaches the search: only duration.md's chunks are allowed
        hits, name = clinic.search(Question("bond rate", scope={"path": "*duration.md"}))
        assert name == "keyword" and hits and all("Duration" in h.chunk.text for h in hits)
        assert clinic.ask(Q_RFR, cache=False).citations  # with the doctor too


def check_treatment(tmp: Path) -> None:
    load_example("treatment")
    assert "search_parts" in TREATMENTS.names()
    line = examples()["treatment route"].split("\n", 1)[1]  # the page's entry in the layer table's routes
    call = ast.parse(f"_routes({line.strip().rstrip(',')})", mode="eval").body
    entry = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert entry == {"compound": ROUTES["compound"] + ("search_parts",)}, entry
    ROUTES.update(entry)
    kb = build_kb(tmp, BOND_DOCS)
    try:
        result = Doctor(Pipeline(kb)).ask("What is duration and what is the risk-free rate?")
        tried = [r for r in result.repairs if r.treatment == "search_parts"]
        assert len(tried) == 1 and tried[0].symptom == "compound" and tried[0].layer == "retrieve", result.repairs
        child = load_trace(kb.db, tried[0].after.trace_id)
        parts = ("What is duration?", "what is the risk-free rate?")
        assert child.rerun_from == "retrieve" and tuple(child.request["search_queries"]) == parts
        assert child.span("retrieve").output.queries == parts
    finally:
        kb.close()


def check_route(tmp: Path) -> None:
    from fastapi.testclient import TestClient  # on use: the serve extra

    from ragclinic.server.app import create_app  # on use: the serve extra (fastapi)
    from ragclinic.server.auth import Keys  # on use: the serve extra

    brief = load_example("route")
    build_kb(tmp, BOND_DOCS).close()
    admin, acme = "admin-key-123", "acme-key-123"
    app = create_app(Settings.load(tmp / "kb", llm="none", allowed_hosts=["testserver"]),
                     Keys([admin, f"{acme}:tenant=acme"]))
    app.include_router(brief.router)  # the one line in server/app.py's create_app
    with TestClient(app) as client:
        r = client.get("/v1/brief", params={"q": Q_RFR}, headers={"Authorization": f"Bearer {admin}"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert "risk-free rate is the return on an investment" in body["answer"] and len(body["doc_ids"]) == 1
        trace = client.get(f"/v1/traces/{body['trace_id']}", headers={"Authorization": f"Bearer {admin}"})
        assert trace.status_code == 200, trace.text
        # a tenant's key: its enforced tag keeps the question inside the tenant's documents (none here)
        r = client.get("/v1/brief", params={"q": Q_RFR}, headers={"Authorization": f"Bearer {acme}"})
        assert r.status_code == 200 and r.json()["doc_ids"] == [], r.text
        assert client.get("/v1/brief", params={"q": Q_RFR}).status_code == 401
        r = client.get("/v1/brief", params={"q": "why " * 5000}, headers={"Authorization": f"Bearer {admin}"})
        assert r.status_code == 422 and "max_question_chars" in r.text, r.text


def check_layer(tmp: Path) -> None:
    """Run in a copy of the source with the page's layer module and its entry in the layer table added (this process
    imports ragclinic from that copy: the caller put it first on PYTHONPATH)."""
    import ragclinic
    from ragclinic.clinic import Clinic, Question
    from ragclinic.debugger import Debugger, Expectation
    from ragclinic.server.telemetry import _LAYER_KIND
    from ragclinic.trace.layers import QUERY_LAYERS
    from ragclinic.trace.model import state_after

    assert str(tmp) in ragclinic.__file__, ragclinic.__file__
    assert QUERY_LAYERS == ("retrieve", "scope", "dedupe", "gate", "generate") and _LAYER_KIND["dedupe"] == "GUARDRAIL"
    same = "# Bills\n\nShort-dated treasury bills are the usual proxy for the risk-free rate.\n"
    build_kb(tmp, {**BOND_DOCS, "copy.md": same, "again.md": same}).close()  # two files, one text
    with Clinic.open(tmp / "kb", llm="none") as clinic:
        seen = clinic.answer(Question("What is the usual proxy for the risk-free rate?", doctor=False, cache=False))
        span = seen.trace.span("dedupe")
        assert span is not None and span.output.dropped and span.input.passages >= 2, seen.trace.spans
        assert [s.layer for s in seen.trace.spans] == list(QUERY_LAYERS)
        passages = state_after(seen.trace, "dedupe").passages
        assert [p.n for p in passages] == list(range(1, len(passages) + 1))
        assert len({" ".join(p.chunk.text.split()) for p in passages}) == len(passages)
        assert clinic.replay(seen.trace.id).text == seen.answer.text  # read back from the store, replayed
        found = Debugger(clinic.pipeline).diagnose(trace_id=seen.trace.id, expect=Expectation(answers=(("bills",),)))
        assert found.layers["dedupe"].status == "not_reached" and found.verdict in ("none", "retrieve", "scope",
                                                                                    "gate", "generate")


def in_a_copy_with_the_layer(tmp: Path) -> Path:
    """A copy of src/ with the page's layer module written and its entry put in SPECS after the scope layer's."""
    import shutil

    src = tmp / "src"
    shutil.copytree(DOC.parents[1] / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (src / "ragclinic" / "pipeline" / "dedupe.py").write_text(examples()["layer"], encoding="utf-8")
    table = src / "ragclinic" / "trace" / "layers.py"
    text = table.read_text(encoding="utf-8")
    entry = examples()["layer entry"].split("\n", 1)[1]
    at = text.index('    LayerSpec("gate",')
    table.write_text(text[:at] + entry + text[at:], encoding="utf-8")
    return src


CHECKS = {"retriever": check_retriever, "treatment": check_treatment, "layer": check_layer, "route": check_route}


# ---------------------------------------------------------------------------------------------- the tests
def test_the_page_marks_the_three_examples():
    assert set(examples()) == {"retriever", "treatment", "treatment route", "layer", "layer entry", "route"}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_worked_example_runs(name, tmp_path):
    """In a process of its own (the environment conftest set up is inherited: no user settings, its cache)."""
    env = os.environ.copy()
    if name == "layer":  # the layer is one entry in the table plus its module: both added to a copy of the source
        src = in_a_copy_with_the_layer(tmp_path / "copy")
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(src), env.get("PYTHONPATH", "")) if x)
    done = subprocess.run([sys.executable, __file__, name, str(tmp_path)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=DOC.parents[1])
    assert done.returncode == 0, f"the {name} example failed:\n{done.stdout}\n{done.stderr}"


if __name__ == "__main__":
    import netguard  # the script's folder (tests/) is first on sys.path

    netguard.install()  # as in every test: no socket beyond loopback
    CHECKS[sys.argv[1]](Path(sys.argv[2]))
