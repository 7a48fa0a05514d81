"""The tools path in strict mode: the model writes a plan, the steps run in order (toolbox.py), a failing step's
error goes back to the model once to re-plan, at most ``tools_max_calls`` tool calls per question; then the answer
is written from the tool outputs. Every number in the answer must come from a tool output, a cited passage or the
question — an answer that states any other number is replaced by the tool's own result, cited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.citations import answer_sentences, parse_citations
from ragclinic.pipeline.reason.plan import parse_plan, plan_messages, reply_of
from ragclinic.pipeline.reason.toolbox import Record, Toolbox, numbers_in
from ragclinic.store.tables import list_tables
from ragclinic.text.lang import language_of
from ragclinic.tools.calculator import ToolError
from ragclinic.types import Claim, Hit, Passage
from ragclinic.text.support import content_terms
from ragclinic.tools.sql import run_sql
from ragclinic.pipeline.scope.instructions import sanitize
from ragclinic.verify.instructions import detector_for
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.retrieve.filters import resolve

PLAN_TOKENS = 200
ANSWER_TOKENS = 120
SHOWN_PASSAGES = 3
SHOWN_CHARS = 400
SHOWN_TABLES = 3

ANSWER_SYSTEM = ("Answer the question from the tool results in one or two sentences. Write the results' numbers "
                 "exactly as they are given and cite the passage numbers in square brackets.")
ANSWER_SYSTEM_ZH = ANSWER_SYSTEM + " 请用中文回答。"


@dataclass
class ToolsAnswer:
    text: str
    claims: list[Claim]
    plan: list[dict]
    tools: list[dict]
    passages: list[Passage]
    flags: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0


def tables_in_scope(kb, passages, question: str) -> list[dict]:
    """The SQL tables of the passages' documents (passages are already inside the scope and the key's tenant)
    that share a content word with the question (in their title, column names or the passages' text), in the
    passages' order."""

    docs = list(dict.fromkeys(p.chunk.doc_id for p in passages))
    if not docs:
        return []
    rank = {d: i for i, d in enumerate(docs)}
    text: dict[str, str] = {}
    for p in passages:
        text[p.chunk.doc_id] = text.get(p.chunk.doc_id, "") + " " + p.chunk.text
    terms = {t.lower() for t in content_terms(question) if len(t) > 1}

    def shares(t: dict) -> bool:
        blob = " ".join([t["title"], text.get(t["doc_id"], "")] + [f"{c[0]} {c[2]}" for c in t["columns"]])
        blob = blob.lower().replace("_", " ")
        return any(w in blob for w in terms)

    tables = sorted(list_tables(kb.db.conn, docs), key=lambda t: (rank[t["doc_id"]], t["ordinal"]))
    return [t for t in tables if shares(t)]


def answer_with_tools(ctx, state, tables: list[dict], max_calls: int) -> ToolsAnswer:
    """The tools path's answer; ``text`` is empty when no plan could be made to run (the caller answers directly,
    keeping the plan and the tool calls that were tried in the trace)."""
    q, lm = state.request.question, ctx.lm
    passages = list(state.passages)
    box = Toolbox(ctx.kb.db.path, tables, passages, q, lambda name: _cite_table(ctx, state, name, tables, passages),
                  lambda query: _search(ctx, state, query, passages), max_calls)
    shown = [(p.n, " ".join(p.chunk.text.split())[:SHOWN_CHARS]) for p in passages[:SHOWN_PASSAGES]]
    tables = tables[:SHOWN_TABLES]  # the documents the search ranked first
    samples = {t["name"]: _sample(ctx, t["name"], tables) for t in tables}
    out = ToolsAnswer("", [], [], [], passages)
    retry: tuple[str, str] | None = None
    for attempt in range(2):
        msgs = plan_messages(q, tables, samples, shown, retry)
        done = lm.chat(msgs, max_tokens=PLAN_TOKENS, temperature=0.0)
        out.prompt_tokens += done.prompt_tokens
        out.completion_tokens += done.completion_tokens
        text = reply_of(msgs, done.text)
        try:
            steps = parse_plan(text, max_calls)
        except ToolError as e:
            out.plan.append({"attempt": attempt + 1, "text": text, "steps": [], "error": str(e)})
            retry = (text, str(e))
            continue
        out.plan.append({"attempt": attempt + 1, "text": text, "steps": [s.to_json() for s in steps], "error": None})
        failed = box.run(steps)
        if failed is None:
            final = box.records[-1]
            break
        out.plan[-1]["error"] = f"step {failed.step}: {failed.error}"
        retry = (text, f"step {failed.step} ({failed.name}) failed: {failed.error}")
        if len(box.records) >= max_calls:
            break
    out.tools = [r.to_json() for r in box.records]
    ok = [r for r in box.records if r.error is None]
    if not out.plan or out.plan[-1]["error"] or not ok:
        out.flags.append("tools_failed: " + (out.plan[-1]["error"] if out.plan else "no plan") + "; answered directly")
        return out
    if len(out.plan) > 1:
        out.flags.append(f"replanned: the first plan failed ({out.plan[0]['error']})")
    _compose(ctx, q, _feeding(final, box.records), out)
    return out


def _feeding(final: Record, records: list[Record]) -> list[Record]:
    """The final step and the steps its result was computed from (of the plan that ran), in order."""
    steps = {r.step: r for r in records[records.index(final) - final.step + 1:records.index(final) + 1]}
    need, todo = set(), [final.step]
    while todo:
        n = todo.pop()
        if n in need or n not in steps:
            continue
        need.add(n)
        todo += list(steps[n].depends_on)
    return [steps[n] for n in sorted(need)]


def _compose(ctx, question: str, ok: list[Record], out: ToolsAnswer) -> None:
    zh = language_of(question) == "zh"
    lines = [f"Question: {question}", "", "Tool results:"]
    for r in ok:
        cites = "".join(f"[{n}]" for n in r.cites)
        lines.append(f"Step {r.step} ({r.name}: {r.input}) {cites}:\n{r.output}")
    lines += ["", f"Question: {question}"]
    msgs = [Message("system", ANSWER_SYSTEM_ZH if zh else ANSWER_SYSTEM), Message("user", "\n".join(lines))]
    done = ctx.lm.chat(msgs, max_tokens=ANSWER_TOKENS, temperature=0.0)
    out.prompt_tokens += done.prompt_tokens
    out.completion_tokens += done.completion_tokens
    sources = tuple(dict.fromkeys(n for r in ok for n in r.cites))
    allowed = numbers_in(question) | {v for r in ok for v in numbers_in(r.output)}
    by_n = {p.n: p for p in out.passages}
    text, claims = _checked(done.text.strip(), sources, allowed, by_n)
    bad = next((c.text for c in claims if c.verdict != "supported"), None)
    missing = not _states(text, ok[-1])
    if not claims or bad is not None or missing:
        why = (f"{ok[-1].output.splitlines()[-1][:40]!r} (the result) is not stated" if missing or not claims else
               f"a number in {bad[:80]!r} is in no tool output")
        out.flags.append(f"tools_answer_replaced: {why}; stated the result instead")
        text = _template(ok[-1], sources, zh)
        text, claims = _checked(text, sources, allowed, by_n)
    out.text, out.claims = text, claims


def _states(text: str, final: Record) -> bool:
    """The answer states the final step's result (its value, or its text for a one-row, one-name answer)."""
    v, low = final.value, text.lower()
    names = [c.strip().lower() for c in (final.output.splitlines()[1:2] or [""])[0].split("|")
             if c.strip() and not numbers_in(c)] if final.name == "sql" else []
    if any(n in low for n in names):
        return True  # "which product ...": the row's name is the answer
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        stated = numbers_in(_without_citations(text))
        return any(abs(x - v) <= max(0.005, abs(v) * 1e-6) for x in stated)
    if isinstance(v, str) and v:
        return v.lower() in low
    return True


def _checked(text: str, sources: tuple[int, ...], allowed: set[float], by_n: dict) -> tuple[str, list[Claim]]:
    """Every sentence cited (the tools' sources when the model left it uncited) and checked: its numbers must be
    among the tool outputs, the question or its cited passages."""
    sentences, claims = [], []
    for s in answer_sentences(text):
        cited = tuple(n for n in parse_citations(s) if n in by_n)
        if not cited and sources:
            s = s.rstrip() + "".join(f" [{n}]" for n in sources) if not s.rstrip()[-1:] in ".。!！?？" else \
                s.rstrip()[:-1] + "".join(f" [{n}]" for n in sources) + s.rstrip()[-1]
            cited = sources
        stated = numbers_in(_without_citations(s))
        backed = allowed | {v for n in cited for v in numbers_in(by_n[n].chunk.text)}
        ok = all(v in backed or round(v, 2) in {round(b, 2) for b in backed} for v in stated)
        chunk = by_n[cited[0]].chunk.id if cited else ""
        claims.append(Claim(s, cited, "supported" if ok else "unsupported", 1.0 if ok else 0.0, chunk, "tools"))
        sentences.append(s)
    return (" ".join(sentences) if sentences else text), claims


def _without_citations(s: str) -> str:
    return re.sub(r"\[\d+(?:\s*[,，、]\s*\d+)*\]", " ", s)


def _template(rec: Record, sources: tuple[int, ...], zh: bool) -> str:
    cites = "".join(f" [{n}]" for n in sources)
    body = rec.output.splitlines()
    if rec.name == "sql" and len(body) == 2:
        pairs = [v.strip() if "(" in c else f"{c.strip()} {v.strip()}"  # SUM(x) names no column: the value alone
                 for c, v in zip(body[0].split("|"), body[1].split("|"))]
        value = ("，" if zh else ", ").join(pairs)
    else:
        value = rec.output.replace("\n", "; ")
    return f"结果：{value}{cites}。" if zh else f"The result: {value}{cites}."


def _sample(ctx, name: str, tables: list[dict]) -> list[tuple]:

    try:
        return list(run_sql(ctx.kb.db.path, f'SELECT * FROM "{name}" LIMIT 2', {t["name"] for t in tables}).rows)
    except ToolError:
        return []


def _cite_table(ctx, state, name: str, tables: list[dict], passages: list[Passage]) -> int | None:
    """The passage that holds table ``name``'s text: one already shown, else the document's chunk with most of
    the table's header words (appended to the passages; not a quarantined chunk, its planted instructions cut)."""
    t = next((t for t in tables if t["name"] == name), None)
    if t is None:
        return None
    heads = {str(c[2] or c[0]).lower() for c in t["columns"]}

    def score(text: str) -> int:
        low = text.lower()
        return sum(h in low for h in heads)

    mine = [p for p in passages if p.chunk.doc_id == t["doc_id"]]
    if mine:
        return max(mine, key=lambda p: score(p.chunk.text)).n
    db = ctx.kb.db
    rows = sorted(db.chunk_rowids_of([t["doc_id"]]))
    chunks = {r: c for r, c in db.chunks_by_rowid(rows).items() if c.id not in state.request.quarantine}
    doc = db.doc_infos([t["doc_id"]]).get(t["doc_id"])
    if not chunks or doc is None:
        return None
    rowid, chunk = max(chunks.items(), key=lambda kv: score(kv[1].text))
    hit = _clean(ctx, Hit(chunk, 0.0, (), rowid), doc)
    if hit is None:
        return None
    p = Passage(len(passages) + 1, hit, doc, marks=("table",))
    passages.append(p)
    return p.n


def _clean(ctx, hit: Hit, doc) -> Hit | None:
    """The chunk with planted instructions cut out (scope/instructions.py), None when nothing else is left: the
    model reads what the tools bring in as it reads the scope layer's passages."""

    if not ctx.settings.strip_instructions:
        return hit
    return sanitize(ctx.kb.db.conn, hit, doc, detector_for(ctx.settings.instruction_detector))[0]


def _search(ctx, state, query: str, passages: list[Passage]) -> list[Passage]:

    req = state.request
    res = resolve(ctx.kb.db, req.scope, newest_only=ctx.settings.scope_newest_version)
    hits = create_retriever(ctx.kb, req.retriever).retrieve(query, 8, res.allowed)
    have = {p.chunk.id for p in passages}
    docs = ctx.kb.db.doc_infos([h.chunk.doc_id for h in hits])
    new: list[Passage] = []
    for h in hits:
        doc = docs.get(h.chunk.doc_id)
        if (h.chunk.id in have or h.chunk.id in req.quarantine or doc is None
                or any(doc.tags.get(k) != v for k, v in req.enforced)):
            continue
        if (h := _clean(ctx, h, doc)) is None:  # the scope layer's check on searched chunks, here too
            continue
        new.append(Passage(len(passages) + len(new) + 1, h, doc, marks=("search",)))
        if len(new) == 3:
            break
    return new
