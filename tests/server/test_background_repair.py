"""The doctor in the background (issue 37, part 3): `/v1/ask` with `"repair": "async"` answers with the plain
pipeline's answer at once; the doctor examines it after, and a repair that wins is published (GET
/v1/repairs/{id}, the stream's `improved` event, the trace, the answer cache); one that does not changes
nothing. The queue is bounded, drops what an ingest made stale, gives way to questions, and holds under load."""

from __future__ import annotations

import json
import threading
import time

import pytest

from helpers import BOND_DOCS
from ragclinic import Clinic
from ragclinic.clinic import Question
from ragclinic.errors import RagclinicError

ADMIN, ACME, GLOBEX = "admin-key-123", "acme-key-123", "globex-key-123"
KEYS = [ADMIN, f"{ACME}:tenant=acme", f"{GLOBEX}:tenant=globex"]
COMPOUND = "What is duration and what is the risk-free rate?"  # the plain answer holds one part; the doctor splits it
HEALTHY = "What is the risk-free rate?"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _serve(tmp, **extra):
    from fastapi.testclient import TestClient

    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    hosts = extra.pop("allowed_hosts", ["testserver"])
    root = tmp / "docs"
    root.mkdir(parents=True)
    for name, text in BOND_DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    (tmp / "acme").mkdir()
    (tmp / "acme" / "leave.md").write_text("# Leave\n\nAcme staff get 30 days of annual leave.\n", encoding="utf-8")
    settings = {"embedder": "fake", "llm": "none", "judge": "llm", "cache_dir": tmp / "cache", **extra}
    with Clinic.open(tmp / "kb", **settings) as c:
        c.ingest(root)
        c.ingest(tmp / "acme", tags={"tenant": "acme"})
    app = create_app(Settings.load(tmp / "kb", **settings, allowed_hosts=hosts), Keys(KEYS))
    return TestClient(app)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with _serve(tmp_path_factory.mktemp("bg"), answer_cache=True) as c:
        yield c


def _ask(client, question, key=ADMIN, **body):
    r = client.post("/v1/ask", json={"question": question, "repair": "async", **body}, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()


def _events(response) -> list[tuple[str, str]]:
    """(event, data) pairs of a server-sent event stream, a multi-line data field joined."""
    events, name, data = [], None, []
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and name:
            events.append((name, "\n".join(data)))
            name, data = None, []
    return events


def _outcome(client, trace_id, key=ADMIN):
    r = client.get(f"/v1/repairs/{trace_id}?wait=30", headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()


def test_the_plain_answer_comes_first_and_the_improved_one_after(client):
    plain = _ask(client, COMPOUND)
    assert plain["repair"]["status"] in ("pending", "running", "improved"), plain["repair"]
    assert plain["repair"]["url"] == f"/v1/repairs/{plain['trace_id']}"
    assert "symptoms" not in plain or not plain.get("repairs")  # the doctor has not run on what was sent
    assert not any("Duration measures" in c["text"] for c in plain["citations"])  # one part only

    done = _outcome(client, plain["trace_id"])
    assert done["status"] == "improved", done
    assert any(c["treatment"] == "decompose" and c["symptom"] == "compound" for c in done["changes"])
    better = done["answer"]
    assert "Duration measures" in better["answer"]
    assert any("Duration measures" in c["text"] for c in better["citations"])
    assert better["trace_id"] == plain["trace_id"]

    # the same as the doctor before the answer gives
    sync = client.post("/v1/ask", json={"question": COMPOUND, "repair": "sync"}, headers=auth(ADMIN)).json()
    assert sync["answer"] == better["answer"]
    assert [c["chunk_id"] for c in sync["citations"]] == [c["chunk_id"] for c in better["citations"]]
    # it came from the answer cache the repair filled
    assert sync["cached"] is True

    # the trace records the doctor's examination
    t = client.get(f"/v1/traces/{plain['trace_id']}", headers=auth(ADMIN)).json()
    assert any(r["treatment"] == "decompose" and r["accepted"] for r in t["repairs"])


def test_a_healthy_answer_is_unchanged(client):
    plain = _ask(client, HEALTHY)
    done = _outcome(client, plain["trace_id"])
    assert done["status"] == "unchanged" and "answer" not in done and done["changes"] == []
    assert done["reason"]


def test_the_stream_sends_final_then_the_improved_answer(client):
    q = "What is a coupon and what is duration?"
    with client.stream("POST", "/v1/ask", json={"question": q, "repair": "async"},
                       headers={**auth(ADMIN), "Accept": "text/event-stream"}) as r:
        events = _events(r)
    names = [n for n, _ in events]
    assert "final" in names and names[-1] in ("improved", "repair_outcome"), names
    assert names.index("final") < len(names) - 1
    final = json.loads(dict(events)["final"])
    last = json.loads(events[-1][1])
    assert final["repair"]["status"] == "pending" and last["trace_id"] == final["trace_id"]
    assert last["status"] in ("improved", "unchanged")
    if names[-1] == "improved":
        assert last["answer"]["answer"] != final["answer"] and last["changes"]


def test_a_tenant_sees_only_its_own_repairs(client):
    mine = _ask(client, "How many days of annual leave do Acme staff get?", key=ACME)
    assert _outcome(client, mine["trace_id"], key=ACME)["status"] in ("improved", "unchanged")
    for other in (GLOBEX,):
        r = client.get(f"/v1/repairs/{mine['trace_id']}", headers=auth(other))
        assert r.status_code == 404
    admin = _ask(client, HEALTHY + " Please.")
    assert client.get(f"/v1/repairs/{admin['trace_id']}", headers=auth(ACME)).status_code == 404
    assert client.get("/v1/repairs/nonexistent", headers=auth(ADMIN)).status_code == 404


def test_wait_is_bounded(client):
    r = client.get("/v1/repairs/x?wait=61", headers=auth(ADMIN))
    assert r.status_code == 422 and "wait" in r.text
    assert client.post("/v1/ask", json={"question": HEALTHY, "repair": "later"},
                       headers=auth(ADMIN)).status_code == 422


def test_the_openai_route_keeps_the_doctor_before_the_answer(client):
    r = client.post("/v1/chat/completions", json={"model": "ragclinic", "messages": [
        {"role": "user", "content": "What is convexity and what is duration?"}]}, headers=auth(ADMIN))
    assert r.status_code == 200 and "repair" not in r.json()


def test_the_clinic_repairs_a_plain_answer_later(tmp_path):
    from helpers import build_kb

    kb = build_kb(tmp_path, BOND_DOCS)
    kb.close()
    with Clinic.open(tmp_path / "kb", llm="none", embedder="fake", judge="llm", cache_dir=tmp_path / "cache") as c:
        q = Question(COMPOUND, repair="async")
        plain = c.answer(q)
        assert plain.repair_pending and plain.result is None and plain.trace is not None
        later = c.repair(q, plain.trace.id)
        assert "Duration measures" in later.answer.text and later.result.repairs
        sync = c.answer(Question(COMPOUND, cache=False))
        assert later.answer.text == sync.answer.text
        with pytest.raises(RagclinicError, match="already examined"):
            c.repair(q, plain.trace.id)
        with pytest.raises(RagclinicError, match="not the plain answer"):
            c.repair(Question(HEALTHY), c.answer(Question(COMPOUND, repair="async", cache=False)).trace.id)
    with pytest.raises(RagclinicError, match="repair='later'"):
        Question("x", repair="later")


# ---------------------------------------------------------------------- the queue
class _Gate:
    """A clinic pool whose reader blocks until released: repairs pile up in the queue."""

    def __init__(self, pool):
        self.pool, self.open = pool, threading.Event()

    def background(self):
        self.open.wait(30)
        return self.pool.background()


def test_the_queue_is_bounded_and_drops_what_an_ingest_made_stale(tmp_path):
    with _serve(tmp_path, repair_queue_max=2, answer_cache=False) as client:
        rc = client.app.state.rc
        gate = _Gate(rc.pool)
        rc.repairs.pool = gate
        sent = [_ask(client, f"What is the risk-free rate, part {i}?") for i in range(4)]
        statuses = [s["repair"]["status"] for s in sent]
        # the first is taken by the worker (blocked), two wait, the fourth is answered without the doctor
        assert statuses.count("skipped") == 1 and statuses[-1] == "skipped", statuses
        assert "repair_queue_max" in sent[-1]["repair"]["reason"]
        assert all(s["answer"] for s in sent)  # every one answered
        assert rc.repairs.depth() <= 2
        r = client.post("/v1/ingest", files=[("files", ("new.md", b"# New\n\nA new page on yields.\n"))],
                        headers=auth(ADMIN))
        assert r.status_code == 200, r.text
        gate.open.set()
        done = [_outcome(client, s["trace_id"]) for s in sent]
        assert [d["status"] for d in done].count("dropped") >= 2, done
        assert all(d["status"] in ("dropped", "skipped") for d in done), done
        metrics = client.get("/metrics", headers=auth(ADMIN)).text
        assert 'ragclinic_background_repairs_total{outcome="dropped"}' in metrics
        assert "ragclinic_background_repair_queue_depth 0.0" in metrics


def test_off_when_the_queue_is_zero(tmp_path):
    with _serve(tmp_path, repair_queue_max=0) as client:
        sent = _ask(client, HEALTHY)
        assert sent["repair"]["status"] == "skipped" and "repair_queue_max is 0" in sent["repair"]["reason"]


def test_under_load_every_question_is_answered_and_the_queue_stays_bounded(tmp_path):
    with _serve(tmp_path, repair_queue_max=3, answer_cache=False) as client:
        rc = client.app.state.rc
        deepest, stop = [0], threading.Event()

        def watch():
            while not stop.is_set():
                deepest[0] = max(deepest[0], rc.repairs.depth())
                time.sleep(0.005)

        watcher = threading.Thread(target=watch)
        watcher.start()
        results, errors = [], []

        def one(i):
            try:
                results.append(_ask(client, [COMPOUND, HEALTHY][i % 2] + f" ({i})"))
            except Exception as e:  # noqa: BLE001 - collected for the assertion
                errors.append(e)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors and len(results) == 16
        done = [_outcome(client, s["trace_id"]) for s in results]
        stop.set()
        watcher.join()
        assert deepest[0] <= 3
        assert all(d["status"] in ("improved", "unchanged", "skipped") for d in done), done
        assert any(d["status"] != "skipped" for d in done)


def test_the_page_shows_the_answer_then_the_improved_one(tmp_path):
    with _serve(tmp_path, answer_cache=False) as client, client.stream(
            "GET", "/ui/ask/stream", params={"q": COMPOUND, "doctor": "later"}, headers=auth(ADMIN)) as r:
        assert r.status_code == 200
        events = _events(r)
    names = [n for n, _ in events]
    assert "final" in names and names[-1] == "done", names
    statuses = [d for n, d in events if n == "status"]
    assert "the doctor is checking this answer…" in statuses
    assert names.index("final") < names.index("improved") < names.index("done")
    html = dict(events)["improved"]
    assert "Improved answer" in html and "the first answer" in html and "decompose (for compound" in html
    new = html.split("</details>", 1)[1]  # the improved answer, after the folded first one
    first = html.split("</details>", 1)[0]
    assert "Duration measures" in new and "Duration measures" not in first.split("the first answer", 1)[1]


def test_the_page_says_when_the_doctor_changed_nothing(client):
    with client.stream("GET", "/ui/ask/stream", params={"q": HEALTHY + " Briefly.", "doctor": "later"},
                       headers=auth(ADMIN)) as r:
        events = _events(r)
    assert "improved" not in [n for n, _ in events]
    assert any(d.startswith("the doctor checked this answer: ") for n, d in events if n == "status"), events


def test_what_counts_as_a_visible_change():
    from types import SimpleNamespace as NS

    from ragclinic.server.repairs import _visibly_changed

    def ans(text, chunks, refused=False, notes=()):
        return NS(text=text, citations=[NS(chunk_id=c) for c in chunks], refused=refused, notes=notes)

    noise, cites = [NS(symptom="noisy_context")], [NS(symptom="citation_error")]
    same = ans("Bills are the proxy [2].", ["a"])
    assert not _visibly_changed(same, ans("Bills are the proxy [1].", ["a"]), noise)  # renumbered
    assert not _visibly_changed(same, ans("Bills are the proxy [3].", ["b"]), noise)  # another passage, same words
    assert _visibly_changed(same, ans("Bills are the proxy [3].", ["b"]), cites)  # a citation repaired
    assert _visibly_changed(same, ans("Bills and notes are the proxy [1].", ["a"]), noise)
    two = ans("Bills are the proxy [1]. Duration measures price moves [2].", ["a", "b"])
    assert not _visibly_changed(two, ans("Duration measures price moves [1]. Bills are the proxy [2].", ["b", "a"]),
                                noise)  # the same sentences reordered
    assert _visibly_changed(same, ans("I can't answer this.", [], refused=True), noise)
    assert not _visibly_changed(same, ans("Bills are the proxy [2].", ["a"], notes=("may be incomplete",)), noise)


class _Clinics:
    """A stand-in pool whose background clinic repairs by a given function (no knowledge base)."""

    def __init__(self, repair):
        self.repair_fn = repair

    def background(self):
        import contextlib
        from types import SimpleNamespace as NS

        outer = self

        @contextlib.contextmanager
        def clinic():
            yield NS(kb=NS(db=NS(version=1)), repair=outer.repair_fn)

        return clinic()


def _queue(repair, **settings):
    from types import SimpleNamespace as NS

    from ragclinic.server.repairs import RepairQueue

    return RepairQueue(_Clinics(repair), NS(repair_queue_max=settings.get("limit", 16)), None,
                       on_outcome=settings.get("on_outcome"))


def test_waiting_answers_are_never_forgotten_and_a_failing_observer_stops_nothing(monkeypatch):
    from ragclinic.server import repairs

    monkeypatch.setattr(repairs, "KEEP", 3)
    gate, seen = threading.Event(), []

    def slow(q, tid):
        gate.wait(10)
        raise RagclinicError("no such trace")  # → "failed", the answer stands

    def observer(outcome):
        seen.append(outcome.status)
        raise RuntimeError("a broken metrics exporter")

    q = _queue(slow, limit=10, on_outcome=observer)
    for i in range(8):  # more waiting than KEEP: none of them may be forgotten
        assert q.submit(Question(f"q{i}"), f"t{i}", 1).status == "pending"
    assert all(q.get(f"t{i}") is not None for i in range(8))
    gate.set()
    done = [q.wait(f"t{i}", 10) for i in range(8)]
    assert all(d is not None and d.status == "failed" for d in done[-3:])  # the last KEEP kept, all finished
    deadline = time.monotonic() + 10
    while seen.count("failed") < 8 and time.monotonic() < deadline:  # the observer runs just after the outcome
        time.sleep(0.01)
    assert seen.count("failed") == 8  # the observer failed every time; the worker went on
    assert q.submit(Question("again"), "t9", 1).status == "pending" and q.wait("t9", 10).status == "failed"
    q.close()
    assert q.submit(Question("late"), "t10", 1).reason == "the server is stopping"


def test_closing_refuses_the_running_repairs_next_model_call():
    from ragclinic.server.pool import CANCELLED, ClientGone

    started, calls = threading.Event(), []

    def repair(q, tid):
        started.set()
        for _ in range(100):  # a repair making model calls until the server stops
            gone = CANCELLED.get()
            if gone is not None and gone.is_set():
                calls.append("refused")
                raise ClientGone("the client disconnected: its queued model call was dropped")
            time.sleep(0.02)
        calls.append("finished")

    q = _queue(repair)
    q.submit(Question("q"), "t", 1)
    assert started.wait(5)
    q.close()
    assert calls == ["refused"] and q.get("t").status == "failed"


@pytest.fixture(scope="module")
def live_bg(tmp_path_factory):
    """The extractive server on a real socket, for the browser."""
    from .conftest import on_socket

    with _serve(tmp_path_factory.mktemp("bg-live"), answer_cache=False, allowed_hosts=["127.0.0.1"]) as c, \
            on_socket(c.app) as url:
        yield url


def test_in_a_browser_the_improved_answer_replaces_the_first(live_bg):
    from playwright.sync_api import sync_playwright

    from .test_ui_browser import SHOTS, _chromium

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 800}, base_url=live_bg)
            violations = []
            page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
            page.goto(f"/?api_key={ADMIN}")
            page.fill("input[name=q]", COMPOUND)
            page.select_option("select[name=doctor]", "later")
            page.click("form.ask button[type=submit]")
            page.wait_for_selector(".improved", timeout=30_000)
            box = page.inner_text("#answer-box")
            assert "Improved answer" in box and "decompose" in box
            assert "Duration measures" in page.inner_text("#answer")  # the new answer holds both parts
            page.click(".improved summary")  # the first answer, folded under it
            assert "treasury bills" in page.inner_text(".improved details")  # the first answer had one part
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "improved-answer.png"), full_page=True)
            assert not violations, violations
        finally:
            browser.close()
