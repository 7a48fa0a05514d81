"""The actions of the whole-surface tenant property: every route a key can call, with questions, scopes and ids
drawn by hypothesis (as integers the world resolves against what exists at that moment), and the driver that
runs sequences of them until a number of requests is reached (the test's size or the bench's 10,000).

A tenant's probe of another owner's trace, chunk or document id is made twice — with that id and with an id of
the same shape that nothing has — and the two answers must read alike (no existence oracle).
"""

from __future__ import annotations

import re
import time

from .property_world import CAUSAL_QUESTIONS, GLOBAL_QUESTIONS, KEY_OF, TENANTS, World

_TRACE_ID = re.compile(r"\b(\d{8}-[0-9a-f]{10})\b")
_LAYERS = ("retrieve", "scope", "gate", "generate")
# kinds, repeated to weight them (uploads and diagnoses cost an ingest / several probes)
KINDS = ("ask", "ask", "ask_sse", "chat", "chat_stream", "retrieval", "ui_ask", "ui_retrieval", "diagnose",
         "diagnose", "rerun", "replay", "feedback", "traces", "trace", "ui_trace", "ui_traces", "passage", "compare",
         "kb", "kb_doc", "upload", "name_probe", "name_probe", "service")


def action_strategy():
    from hypothesis import strategies as st

    pick = st.integers(0, 2 ** 16)
    return st.tuples(st.sampled_from(KINDS), st.integers(0, len(TENANTS)), pick, pick, pick)


# ---------------------------------------------------------------------- requests
def _send(w: World, route: str, key: str, method: str, url: str, **kw):
    # the key as a header (a page of another origin cannot send one, so Origin and CSRF checks do not apply)
    said = {"X-API-Key": KEY_OF[key]} if w.rnd.random() < 0.2 else {"Authorization": f"Bearer {KEY_OF[key]}"}
    headers = {**said, **kw.pop("headers", {})}
    r = w.client.request(method, url, headers=headers, follow_redirects=False, **kw)
    text = r.text
    w.check(route, key, r.status_code, text)
    if r.status_code == 200:
        mine = w.owned[key].traces
        for tid in _TRACE_ID.findall(text):
            if tid not in mine:
                mine.append(tid)
    return r.status_code, text


def _others(w: World, key: str) -> list[str]:
    return [o for o in w.owned if o != key]


def _nth(seq, i: int):
    seq = list(seq)
    return seq[i % len(seq)] if seq else None


def _own_trace(w: World, key: str, i: int) -> str | None:
    return _nth(w.owned[key].traces, i)


def _their(w: World, key: str, what: str, i: int) -> str | None:
    """Another owner's trace / chunk / doc id (never one this key holds itself)."""
    mine = set(getattr(w.owned[key], what)) | (w.traces_of(key) if what == "traces" and key else set())
    pool = sorted({x for o in _others(w, key) for x in getattr(w.owned[o], what)} - mine)
    return _nth(pool, i)


QUESTION_KINDS = 10


def question(w: World, key: str, a: int) -> str:
    """Own-topic, another tenant's entity (as written or in capitals) or marker, global, mixed, unanswerable, a
    table question (over the tools path; now and then naming another owner's table or column), a causal one."""
    owner = key or _nth(list(w.owned), a // QUESTION_KINDS)
    own = _nth(w.owned[owner].names, a // 3)
    other = _nth([n for o in _others(w, key) for n in w.owned[o].names], a // 5)
    marker = _nth([m for o in _others(w, key) for m in w.owned[o].markers], a // 7)
    kind = a % QUESTION_KINDS
    if kind == 8:
        return w.table_question(key, owner, a // QUESTION_KINDS)
    if kind == 9:
        return CAUSAL_QUESTIONS[a // QUESTION_KINDS % len(CAUSAL_QUESTIONS)]
    if kind in (0, 1):
        return f"Who signed the contract with {own} and what is the contract code?"
    if kind == 2:
        w.note_sent(key, other)
        return f"Who works with {other}?"
    if kind == 3:
        w.note_sent(key, other.upper())
        return f"Tell me about {other.upper()} and its valves."
    if kind == 4:
        w.note_sent(key, marker)
        return f"What does the contract code {marker} refer to?"
    if kind == 5:
        return GLOBAL_QUESTIONS[a // QUESTION_KINDS % len(GLOBAL_QUESTIONS)]
    if kind == 6:
        return f"What are the main risks across these reports for {own}?"
    return "What is the boiling point of mercury on Neptune?"


def scope(w: World, key: str, b: int) -> dict | None:
    other = _nth([o for o in TENANTS if o != key], b // 7)
    kind = b % 7
    if kind == 5:
        doc = _their(w, key, "docs", b // 7)
        if doc is None:
            return None
        w.note_sent(key, doc)
        return {"doc": doc}
    return [None, {"tenant": other}, {"tenant": key or other}, {"path": "*"}, {"path": f"*{other}*"}, None,
            {"tenant": other, "path": "*"}][kind]


# ---------------------------------------------------------------------- one action
def ask(w, key, a, b, c, sse=False):
    body = {"question": question(w, key, a), "scope": scope(w, key, b), "doctor": c % 2 == 0}
    headers = {"Accept": "text/event-stream"} if sse else {}
    _send(w, "POST /v1/ask" + (" (SSE)" if sse else ""), key, "POST", "/v1/ask", json=body, headers=headers)
    return 1


def chat(w, key, a, b, c, stream=False):
    messages = [{"role": "user", "content": question(w, key, a)}]
    if c % 3 == 0:  # a follow-up asked together with the question before it
        messages += [{"role": "assistant", "content": "…"}, {"role": "user", "content": "and in 2023?"}]
    body = {"model": "m", "messages": messages, "stream": stream, "scope": scope(w, key, b), "doctor": c % 2 == 0}
    _send(w, "POST /v1/chat/completions" + (" (stream)" if stream else ""), key, "POST", "/v1/chat/completions",
          json=body)
    return 1


def retrieval(w, key, a, b, c):
    _send(w, "POST /v1/retrieval", key, "POST", "/v1/retrieval",
          json={"query": question(w, key, a), "scope": scope(w, key, b), "k": 1 + c % 20})
    return 1


def ui_ask(w, key, a, b, c):
    params = {"q": question(w, key, a), "doctor": "1" if c % 2 else "0"}
    s = scope(w, key, b) or {}
    if "tenant" in s:
        params["tenant"] = s["tenant"]
    _send(w, "GET /ui/ask/stream", key, "GET", "/ui/ask/stream", params=params)
    return 1


def ui_retrieval(w, key, a, b, c):
    _send(w, "POST /ui/retrieval", key, "POST", "/ui/retrieval", data={"q": question(w, key, a)})
    return 1


def diagnose(w, key, a, b, c):
    """The admin diagnoses a trace some key made, with an expected answer from another tenant's document; then
    the trace's owner reads what that made: its trace page, each trace of the round the page lists, a replay."""
    owner = key
    tid = _own_trace(w, owner, a)
    if tid is None:
        return 0
    _, seen = _send(w, "GET /v1/traces/{id}", "", "GET", f"/v1/traces/{tid}")  # the admin reads the question
    asked = re.search(r'"query":\s*"([^"]*)"', seen)
    marker = w.expected_for(asked.group(1) if asked else "", owner, b)
    who = owner if (c % 7 == 0 and owner) else ""  # now and then the tenant itself tries (403)
    if c % 2:
        _send(w, "POST /v1/diagnose", who, "POST", "/v1/diagnose", json={"trace_id": tid, "expected": [marker]})
    else:
        _send(w, "POST /ui/diagnose", who, "POST", "/ui/diagnose", data={"trace_id": tid, "expected": marker})
    if not owner:
        return 2
    status, page = _send(w, "GET /traces/{id}", owner, "GET", f"/traces/{tid}")
    n = 3
    for other in dict.fromkeys(_TRACE_ID.findall(page) if status == 200 else []):
        if other != tid and n < 7:
            _send(w, "GET /v1/traces/{id}", owner, "GET", f"/v1/traces/{other}")
            _send(w, "POST /v1/traces/{id}/replay", owner, "POST", f"/v1/traces/{other}/replay")
            n += 2
    return n


def _by_trace(route: str, method: str, url_of, kw_of=lambda _tid: {}):
    """An action on one trace: the key's own, or (one time in four) another owner's, probed."""
    def act(w, key, a, b, c):
        if a % 4 == 0 and (theirs := _their(w, key, "traces", b)) is not None:
            return _probe(w, route, key, theirs, url_of, method, kw_of)
        tid = _own_trace(w, key, b)
        if tid is None:
            return 0
        _send(w, route, key, method, url_of(tid), **kw_of(tid))
        return 1
    return act


def _probe(w, route, key, theirs, url_of, method, kw_of) -> int:
    """``url_of(id)`` with another owner's id and with one nothing has: the two answers must read alike."""
    w.note_sent(key, theirs)
    none = w.fake_id(theirs)
    a = _send(w, route, key, method, url_of(theirs), **kw_of(theirs))
    b = _send(w, route, key, method, url_of(none), **kw_of(none))
    if key:
        w.oracle(route, key, a, b, (theirs, none))
    return 2


rerun = _by_trace("POST /ui/rerun", "POST", lambda _t: "/ui/rerun",
                  lambda t: {"data": {"trace_id": t, "layer": _LAYERS[sum(map(ord, t)) % 4]}})
replay = _by_trace("POST /v1/traces/{id}/replay", "POST", lambda t: f"/v1/traces/{t}/replay")
feedback = _by_trace("POST /v1/feedback", "POST", lambda _t: "/v1/feedback",
                     lambda t: {"json": {"trace_id": t, "rating": 1, "note": "property"}})
trace = _by_trace("GET /v1/traces/{id}", "GET", lambda t: f"/v1/traces/{t}")
ui_trace = _by_trace("GET /traces/{id}", "GET", lambda t: f"/traces/{t}")


def traces(w, key, a, b, c):
    _, text = _send(w, "GET /v1/traces", key, "GET", f"/v1/traces?limit={1 + a % 30}")
    n = 1
    for tid in _TRACE_ID.findall(text)[: 1 + b % 3]:
        _send(w, "GET /v1/traces/{id}", key, "GET", f"/v1/traces/{tid}")
        n += 1
    return n


def ui_traces(w, key, a, b, c):
    _send(w, "GET /traces", key, "GET", "/traces")
    return 1


def compare(w, key, a, b, c):
    mine = _own_trace(w, key, a)
    if mine is None:
        return 0
    if c % 3 == 0 and (theirs := _their(w, key, "traces", b)) is not None:
        return _probe(w, "GET /compare", key, theirs, lambda t: f"/compare?a={mine}&b={t}", "GET", lambda _t: {})
    _send(w, "GET /compare", key, "GET", f"/compare?a={mine}&b={_own_trace(w, key, b)}")
    return 1


def passage(w, key, a, b, c):
    if a % 3 == 0 and (theirs := _their(w, key, "chunks", b)) is not None:
        return _probe(w, "GET /passage/{chunk}", key, theirs, lambda x: f"/passage/{x}", "GET", lambda _x: {})
    chunk = _nth(sorted(w.owned[key].chunks), b)
    if chunk is None:
        return 0
    tid = _own_trace(w, key, c) or ""
    _send(w, "GET /passage/{chunk}", key, "GET", f"/passage/{chunk}?trace={tid}&n=1")
    return 1


def kb(w, key, a, b, c):
    _send(w, "GET /kb", key, "GET", "/kb")
    return 1


def service(w, key, a, b, c):
    """The routes around the answers: models, health, metrics (the admin's), the OpenAPI schema."""
    url = ("/v1/models", "/healthz", "/metrics", "/openapi.json")[a % 4]
    _send(w, f"GET {url}", key, "GET", url)
    return 1


def kb_doc(w, key, a, b, c):
    if a % 3 == 0 and (theirs := _their(w, key, "docs", b)) is not None:
        return _probe(w, "GET /kb/doc/{id}", key, theirs, lambda x: f"/kb/doc/{x}", "GET", lambda _x: {})
    doc = _nth(sorted(w.owned[key].docs), b)
    if doc is None:
        return 0
    _send(w, "GET /kb/doc/{id}", key, "GET", f"/kb/doc/{doc}")
    return 1


def upload(w, key, a, b, c):
    """A new document with fresh markers and names, owned by the tenant (the admin's: tagged or not)."""
    from .property_world import document

    owner = key or ("" if b % 4 == 3 else TENANTS[b % 3])
    tags = [f"tenant={owner}"] if (not key and owner) else ["kind=upload"]
    text = document(w.new_names(owner), [w.new_marker(owner) for _ in range(4)], ("supply", "safety")[a % 2])
    w.texts.append((owner, text))
    name = f"report-{a % 5}.md"  # names repeat across keys and uploads
    files = [("files", (name, text.encode("utf-8"), "text/markdown"))]
    w.uploads += 1
    if c % 2:
        _send(w, "POST /v1/ingest", key, "POST", "/v1/ingest", files=files, data={"tags": tags})
    else:
        _send(w, "POST /ui/upload", key, "POST", "/ui/upload", files=files, data={"tags": ",".join(tags)})
    w.refresh()
    return 1


def name_probe(w, key, a, b, c):
    """A tenant names another owner's entity, and then one nothing has: what the graph and the doctor say of the
    two (the question's graph entities, terms "never in the corpus") must read alike."""
    if not key:
        return ask(w, key, a, b, c)
    theirs = _nth([n for o in _others(w, key) for n in w.owned[o].names], a)
    stem = "".join(w.rnd.choice("bdfgklmnprstvz") + w.rnd.choice("aeiou") for _ in range(4))
    none = " ".join(stem.capitalize() + x for x in ("ar", "on")[: len(theirs.split())])
    seen = []
    for name in (theirs, none):
        w.note_sent(key, name.upper())
        body = {"question": f"Tell me about {name.upper()} and its valves.", "doctor": c % 2 == 0}
        status, text = _send(w, "POST /v1/ask (name probe)", key, "POST", "/v1/ask", json=body)
        tid = _TRACE_ID.search(text)
        _, t = _send(w, "GET /v1/traces/{id}", key, "GET", f"/v1/traces/{tid.group(1)}") if tid else (0, "{}")
        seen.append((status, _existence_signals(t, name)))
    w.oracle("graph/doctor on a named entity", key, (seen[0][0], repr(seen[0][1])), (seen[1][0], repr(seen[1][1])),
             (theirs, none))
    return 4


def _existence_signals(trace_json: str, name: str) -> list:
    """What tells whether a name occurs in the knowledge base: the graph's question entities, seeds and missing
    entities, and the doctor's "never occur in the corpus" terms — with the name's words masked."""
    import json

    from ragclinic.text.analyzer import analyze

    out: list = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("question_entities", "seeds", "missing") and isinstance(v, list):
                    out.append((k, sorted(map(str, v))))
                elif k == "evidence" and isinstance(v, str) and "never occur" in v:
                    out.append((k, v))
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    try:
        walk(json.loads(trace_json))
    except ValueError:
        return ["(not JSON)"]
    masked = repr(out)
    for word in name.split():  # as written, and as the lexical index analyses it (the doctor's terms: "ventur")
        for form in sorted({word, *analyze(word)}, key=len, reverse=True):
            masked = re.sub(re.escape(form), "<w>", masked, flags=re.I)
    return [masked]


ACTIONS = {
    "ask": ask, "ask_sse": lambda *x: ask(*x, sse=True), "chat": chat, "chat_stream": lambda *x: chat(*x, stream=True),
    "retrieval": retrieval, "ui_ask": ui_ask, "ui_retrieval": ui_retrieval, "diagnose": diagnose, "rerun": rerun,
    "replay": replay, "feedback": feedback, "traces": traces, "trace": trace, "ui_trace": ui_trace,
    "ui_traces": ui_traces, "passage": passage, "compare": compare, "kb": kb, "kb_doc": kb_doc, "upload": upload,
    "name_probe": name_probe, "service": service,
}


# ---------------------------------------------------------------------- the driver
def prelude(w: World) -> int:
    """Every kind of question and every action once by each key, before hypothesis draws: whatever it draws, a
    run has asked global and graph questions, diagnosed each tenant's traces and probed every route."""
    n, done = 0, []

    def step(label: tuple, made: int) -> None:
        nonlocal n
        n += made
        done.append(label)
        if w.leaks and w.first_leak_actions is None:
            w.first_leak_actions = ["prelude", *done[-5:]]

    for who in range(len(TENANTS) + 1):
        key = "" if who == 0 else TENANTS[who - 1]
        for kind in range(QUESTION_KINDS):  # each kind of question, and its trace
            body = {"question": question(w, key, kind + QUESTION_KINDS * who), "doctor": False}
            _, text = _send(w, "POST /v1/ask", key, "POST", "/v1/ask", json=body)
            if tid := _TRACE_ID.search(text):
                _send(w, "GET /v1/traces/{id}", key, "GET", f"/v1/traces/{tid.group(1)}")
            step(("ask+trace", key or "admin", body["question"]), 2)
        for i, kind in enumerate(dict.fromkeys(KINDS)):
            picks = (i * 37 + who, i * 11 + who, 2 * i + 1)
            step((kind, key or "admin", *picks), ACTIONS[kind](w, key, *picks))
    return n


def run_property(w: World, requests: int, *, seed: int | None = None, per_example: int = 12) -> float:
    """Hypothesis-drawn sequences of actions (up to ``per_example`` each) until ``requests`` requests were made;
    every leak is recorded in ``w.leaks`` (not raised: the world's state carries over between examples, so a
    leak is reported with the sequence that showed it, not shrunk). ``seed`` None: derandomised (CI). Seconds."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fix_seed
    from hypothesis import strategies as st

    made = [0]
    w.first_leak_actions = None  # the actions (the prelude's or one drawn sequence) up to the first leak
    t0 = time.perf_counter()

    @settings(max_examples=max(10, requests), deadline=None, database=None, derandomize=seed is None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False)
    @given(st.lists(action_strategy(), min_size=1, max_size=per_example))
    def sequences(actions):
        done = []
        for kind, who, a, b, c in actions:
            if made[0] >= requests:
                return
            key = "" if who == 0 else TENANTS[who - 1]
            before = len(w.leaks)
            made[0] += ACTIONS[kind](w, key, a, b, c)
            done.append((kind, key or "admin", a, b, c))
            if len(w.leaks) > before and w.first_leak_actions is None:
                w.first_leak_actions = list(done)

    if seed is not None:
        sequences = fix_seed(seed)(sequences)
    made[0] += prelude(w)
    while made[0] < requests:
        sequences()
    return time.perf_counter() - t0
