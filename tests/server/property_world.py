"""The world of the whole-surface tenant property (tests/server/test_http_property.py, bench/tenant_property.py).

One knowledge base built with the knowledge graph (``graph="fast"``) and causal links (``causal_links``), served
with the scripted model: an admin key and three tenant keys. Every document carries secret markers (lower-case
tokens nobody else's text holds) and capitalised entity names unique to its owner, so a leaked chunk, graph entity,
relation or community shows up as bytes. Each owner also has a table (a CSV whose column name and values are
markers: the SQL tables of store/tables.py, for the tools path) and half-chains of causes whose ends every owner
shares ("the closure of the main rail line"), so a causal ranking that crossed owners would join them. Untagged
documents belong to the admin ("" below): tenants may not see them either.

``World.check`` is the invariant: what a tenant key gets back holds no marker, entity name (as written or as
the graph's lower-case key), chunk id or doc id of another owner, and no absolute path of the server's folders.
What the key itself sent (a probe naming another tenant's entity or id) is excluded for that key only — exactly
as sent, so a lower-case graph key of a name sent in capitals still counts.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TENANTS = ("t0", "t1", "t2")
ADMIN_KEY = "prop-admin-key-0001"
KEY_OF = {"": ADMIN_KEY, **{t: f"prop-{t}-key-0001" for t in TENANTS}}
KEY_SPECS = [ADMIN_KEY] + [f"{KEY_OF[t]}:tenant={t}" for t in TENANTS]

# Capitalised names unique to one owner: the graph makes entities, relations and communities of them. Each holds
# an invented word (the others are ordinary words, not checked alone), so a name leaks visibly even word by word.
NAMES = {
    "t0": ["Project Zephyrix", "Hank Scorpiano", "Cypressor Foundry", "Ingrid Vasquella", "Marlowe Tidewick",
           "Orbitalis Group"],
    "t1": ["Operation Basiliskor", "Greta Vondrakova", "Quillfeatha Mills", "Tobias Wrenfeld", "Halcyonix Dredging",
           "Saffronel Lattice"],
    "t2": ["Initiative Orreryx", "Dmitri Hallorano", "Saltmarsko Ventures", "Petra Kowalczyna", "Brindlex Aerospace",
           "Junipero Vault"],
    "": ["Bureau Kestrelix", "Olwen Prycella", "Ashgrovia Holdings", "Ferris Umbrixa"],
}
ORDINARY = frozenset("Project Hank Foundry Ingrid Marlowe Group Operation Greta Mills Tobias Dredging Lattice "
                     "Initiative Dmitri Ventures Petra Aerospace Vault Bureau Olwen Holdings Ferris".split())
_SYLLABLES = ("ka", "vo", "lu", "ri", "ze", "mo", "ta", "xi", "pe", "du", "no", "qua")
TABLE_QUESTIONS = ("What is the total of the amount in the table?", "Which row has the highest amount in the table?",
                   "What is the average amount per item in the table?", "Which item has the lowest amount?")
CAUSAL_QUESTIONS = ("Why was the main rail line closed?", "What caused the closure of the main rail line?",
                    "Why did the shortages of fuel happen?", "What led to the shortages of fuel in the depots?")
GLOBAL_QUESTIONS = ("What are the main risks discussed across these reports?",
                    "Which suppliers appear in more than one contract?",
                    "What themes are described across all documents?",
                    "Summarise the key risks across these contracts.")


def document(names: list[str], markers: list[str], topic: str) -> str:
    """A supplier report naming ``names`` (4: two organisations, a person, a place) with two markers a paragraph."""
    a, b, p, c = names
    return (f"# {a} {topic} report\n\nIn 2023 the firm {a} signed a {topic} contract with {b}; the contract code is "
            f"{markers[0]}. Every month {b} ships valves to {c}, reference {markers[1]}.\n\n## Risks\n\n"
            f"Late deliveries by {b} are the main {topic} risk for {c}, says {p} (file {markers[2]}). "
            f"Corrosion at {c} was reported by {p} and {a}, ticket {markers[3]}.\n")


def table(names: list[str], column: str, markers: list[str], seed: int) -> str:
    """A CSV: one row per name, a column named by a marker (its values markers too) and an amount."""
    rows = [f"{n},{m},{(seed * 37 + 11 * i) % 900 + 100}" for i, (n, m) in enumerate(zip(names, markers))]
    return "\n".join([f"item,{column},amount", *rows]) + "\n"


def causes(names: list[str], markers: list[str]) -> str:
    """The two halves of a causal chain, each in its own paragraph: heavy rain → the closure of the main rail line
    → shortages of fuel; every owner states them with its own names and markers."""
    return (f"# {names[0]} rail report\n\nHeavy rain near {names[1]} flooded the valley in {markers[0]}. This led "
            f"to the closure of the main rail line.\n\n## Depots\n\nThe closure of the main rail line caused "
            f"shortages of fuel in the depots of {names[2]}, reference {markers[1]}.\n")


@dataclass
class Owned:
    """What belongs to one owner: the strings only its key (and the admin's) may ever read."""

    markers: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    chunks: set[str] = field(default_factory=set)
    docs: set[str] = field(default_factory=set)
    traces: list[str] = field(default_factory=list)
    tables: set[str] = field(default_factory=set)  # its SQL tables' names (t_<doc>_<n>)
    columns: list[str] = field(default_factory=list)  # its tables' marker column names (also in ``markers``)


@dataclass
class Leak:
    route: str
    key: str
    what: str  # "marker", "entity", "chunk id", "doc id", "path", "oracle", "5xx"
    leaked: str
    owner: str
    context: str

    def line(self) -> str:
        return (f"{self.route} key={self.key or 'admin'}: {self.what} {self.leaked!r} of "
                f"{self.owner or 'admin-only'} … {self.context}")


class World:
    """The served knowledge base, who owns which strings, and the running tally of requests and leaks."""

    def __init__(self, client, root: Path, kb: Path, seed: int = 0) -> None:
        self.client, self.root, self.kb = client, root, kb
        self.rnd = random.Random(seed)
        self.owned = {o: Owned() for o in ("", *TENANTS)}
        self.sent: dict[str, set[str]] = {t: set() for t in TENANTS}  # what each tenant key sent itself
        self.leaks: list[Leak] = []
        self.routes: Counter = Counter()
        self.statuses: Counter = Counter()
        self.odd: Counter = Counter()  # (route, status) of every answer that is not a 200
        self.odd_text: dict[tuple[str, int], str] = {}  # the first such answer's start
        self.uploads = 0
        self.texts: list[tuple[str, str]] = []  # (owner, text) of every document: the admin's expected answers
        self.graph = 0  # tenant responses that show a question answered over the graph's communities
        self.own = 0  # tenant responses that showed the tenant its own documents (the test is not vacuous)
        self._forbidden: dict[str, list[tuple[str, str, str]]] = {}
        self._marker_no = 0
        self._name_no = 0

    # ------------------------------------------------------------------ ownership
    def new_marker(self, owner: str) -> str:
        self._marker_no += 1
        letters = "".join(self.rnd.choice("bcdfghjkmnpqrstvwxz") for _ in range(5))
        m = f"zq{letters}{self._marker_no:04d}"
        self.owned[owner].markers.append(m)
        self._forbidden.clear()
        return m

    def new_names(self, owner: str, n: int = 4) -> list[str]:
        """Fresh names for an upload, registered as ``owner``'s: two invented words of fixed width (4 syllables
        of a counter and a suffix), so no name is a substring of another."""
        out = []
        for _ in range(n):
            self._name_no += 1
            k = self._name_no
            stem = "".join(_SYLLABLES[k // 12 ** i % 12] for i in range(4))
            name = f"{stem.capitalize()}ar {stem.capitalize()}on"
            self.owned[owner].names.append(name)
            out.append(name)
        self._forbidden.clear()
        return out

    def expected_for(self, question: str, owner: str, i: int) -> str:
        """A marker the admin calls the right answer to ``question``: from another owner's document that names
        what the question names (so the debugger's probes reach the generator with that chunk), else any."""
        low = question.lower()
        near = [t for o, t in self.texts if o != owner and any(n.lower() in low for n in _names_in(t))]
        pool = near or [t for o, t in self.texts if o != owner]
        markers = re.findall(r"\bzq[a-z]{5}\d{4}\b", pool[i % len(pool)])
        return markers[i % len(markers)]

    def refresh(self) -> None:
        """Doc and chunk ids by owner, from the knowledge base itself (after an ingest or an upload)."""
        conn = sqlite3.connect(f"file:{self.kb / 'kb.sqlite3'}?mode=ro", uri=True, timeout=60)
        try:
            tags = {d: json.loads(t).get("tenant", "") for d, t in conn.execute("SELECT doc_id, tags FROM documents")}
            for o in self.owned.values():
                o.docs.clear()
                o.chunks.clear()
            for d, owner in tags.items():
                self.owned.setdefault(owner, Owned()).docs.add(d)
            for c, d in conn.execute("SELECT chunk_id, doc_id FROM chunks"):
                self.owned[tags.get(d, "")].chunks.add(c)
            for o in self.owned.values():
                o.tables.clear()
            for name, d in conn.execute("SELECT name, doc_id FROM sql_tables"):
                self.owned[tags.get(d, "")].tables.add(name)
        finally:
            conn.close()
        self._forbidden.clear()

    def traces_of(self, tenant: str) -> set[str]:
        """Every trace id a tenant's key made (its doctor's and debugger's rounds included), from the knowledge
        base: ids a key sees in listings are not always ids it made (the admin sees everyone's)."""
        conn = sqlite3.connect(f"file:{self.kb / 'kb.sqlite3'}?mode=ro", uri=True, timeout=60)
        try:
            return {r[0] for r in conn.execute("SELECT id FROM traces WHERE json_extract(data, '$.request.enforced') "
                                               "= json(?)", [json.dumps([["tenant", tenant]] if tenant else [])])}
        finally:
            conn.close()

    def table_question(self, key: str, owner: str, i: int) -> str:
        """"What is the total of the amount in the table?" and the like, by ``key`` (asking of ``owner``'s table); one
        in three names the owner's marker column, one in four another owner's table (a planted instruction the
        scripted model follows) or marker column."""
        q = TABLE_QUESTIONS[i % len(TABLE_QUESTIONS)]
        cols = self.owned[owner].columns
        if i % 3 == 1 and cols:
            col = cols[i % len(cols)]
            q = q.replace("the amount", f"the {col}") if "the amount" in q else f"{q} By {col}, please."
        if i % 4 == 3:
            theirs = sorted({x for o, own in self.owned.items() if o != key for x in own.tables | set(own.columns)})
            if theirs:
                self.note_sent(key, theirs[i // 4 % len(theirs)])
                q = f"{q} Use the table {theirs[i // 4 % len(theirs)]}."
        return q

    def note_sent(self, key: str, *strings: str) -> None:
        if key:
            self.sent[key].update(s for s in strings if s)
            self._forbidden.pop(key, None)

    def forbidden(self, tenant: str) -> list[tuple[str, str, str]]:
        """(string, kind, owner) a tenant key may never read, less what it sent itself (in any case: the pipeline
        echoes a question lower-cased in places)."""
        if tenant not in self._forbidden:
            out = [(str(self.kb), "path", "server"), (str(self.root / "cache"), "path", "server")]
            for owner, o in self.owned.items():
                if owner == tenant:
                    continue
                out.append((str(self.root / "docs" / (owner or "shared")), "path", owner))
                out += [(m, "marker", owner) for m in o.markers]
                out += [(v, "entity", owner) for n in o.names for v in (n, n.lower())]
                out += [(v, "entity", owner) for n in o.names for w in n.split() if w not in ORDINARY
                        for v in (w, w.lower())]
                out += [(c, "chunk id", owner) for c in o.chunks]
                out += [(d, "doc id", owner) for d in o.docs]
                out += [(t, "table", owner) for t in o.tables]
            sent = " ".join(self.sent[tenant]).lower()
            self._forbidden[tenant] = [x for x in dict.fromkeys(out) if x[0].lower() not in sent]
        return self._forbidden[tenant]

    # ------------------------------------------------------------------ the invariant
    def check(self, route: str, key: str, status: int, text: str) -> None:
        self.routes[route] += 1
        self.statuses[status] += 1
        if status != 200:
            self.odd[(route, status)] += 1
            self.odd_text.setdefault((route, status), text[:160])
        if status >= 500:
            self.leaks.append(Leak(route, key, "5xx", str(status), "", text[:200]))
        if not key:
            return
        self.own += any(m in text for m in self.owned[key].markers)
        self.graph += '"kind":"global"' in text or '"kind": "global"' in text
        for s, kind, owner in self.forbidden(key):
            if (i := text.find(s)) >= 0:
                ctx = text[max(0, i - 80):i + len(s) + 80].replace("\n", " ")
                self.leaks.append(Leak(route, key, kind, s, owner, ctx))

    def oracle(self, route: str, key: str, theirs: tuple[int, str], none: tuple[int, str], ids: tuple[str, str]):
        """Another owner's id must read exactly as an id that does not exist (status and body, the id aside)."""
        a = (theirs[0], theirs[1].replace(ids[0], "<id>"))
        b = (none[0], none[1].replace(ids[1], "<id>"))
        if _volatile(a) != _volatile(b):
            self.leaks.append(Leak(route, key, "oracle", ids[0], "", f"{a[0]} {a[1][:150]!r} vs {b[0]} {b[1][:150]!r}"))

    def fake_id(self, like: str) -> str:
        """An id of the same shape as ``like`` (a trace id's date kept) that nothing has."""
        def hexes(n: int) -> str:
            return "".join(self.rnd.choice("0123456789abcdef") for _ in range(n))

        if m := re.fullmatch(r"(\d{8}-)([0-9a-f]+)", like):
            return m.group(1) + hexes(len(m.group(2)))
        return hexes(len(like))

    def report(self, seconds: float, examples: int = 5) -> str:
        by_kind = Counter(f"{x.route}: {x.what}" for x in self.leaks)
        lines = [f"requests {sum(self.routes.values())} in {seconds:.1f} s, uploads {self.uploads}, tenant responses "
                 f"with their own markers {self.own}, with a global graph answer {self.graph}",
                 "by route: " + ", ".join(f"{r} {n}" for r, n in sorted(self.routes.items())),
                 "statuses: " + ", ".join(f"{s} {n}" for s, n in sorted(self.statuses.items())),
                 "not 200: " + ", ".join(f"{r} {s} ×{n}" for (r, s), n in sorted(self.odd.items())),
                 *(f"  {r} {s}: {t}" for (r, s), t in sorted(self.odd_text.items()) if s not in (403, 404)),
                 f"leaks: {len(self.leaks)}" + (" (" + ", ".join(f"{k} {n}" for k, n in by_kind.items()) + ")"
                                               if self.leaks else "")]
        seen: set[tuple[str, str]] = set()
        for x in self.leaks:
            if (x.route, x.what) not in seen and len(seen) < examples:
                seen.add((x.route, x.what))
                lines.append("  " + x.line())
        return "\n".join(lines)


def _names_in(text: str) -> list[str]:
    return re.findall(r"[A-Z][a-z]+\d* [A-Z][a-z]+", text)


def _volatile(pair: tuple[int, str]) -> tuple[int, str]:
    """Per-request tokens (CSRF, nonces) do not tell anything about the id."""
    return pair[0], re.sub(r'(nonce|csrf[\w-]*|token)(["\'=:\s]+)[\w-]{8,}', r"\1\2<tok>", pair[1], flags=re.I)


def _reply(messages) -> str:
    """The scripted model echoes its passages (each cited), so whatever reached the context reaches the answer. Asked
    for a plan (the tools path) it queries the table the question names — as a model a planted instruction steers —
    else the first table it is shown, and the tool results it is given are echoed the same way."""
    user = next(m.content for m in reversed(messages) if m.role == "user")
    if user.rstrip().endswith(("Plan:", "(JSON list only).")):
        return _plan(next(m.content for m in messages if m.role == "user"))
    body = user.split("\n", 1)[-1].rsplit("Question:", 1)[0]
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(body.split())) if len(s) > 12][:6]
    return " ".join(f"{s} [1]" for s in sentences) or "I do not know."


def _plan(prompt: str) -> str:
    shown = re.findall(r"^Table (t_[0-9a-z]+_\d+)", prompt.split("Passages:")[0], re.M)
    asked = re.findall(r"\b(t_[0-9a-z]+_\d+)\b", prompt.rsplit("Question:", 1)[-1])
    if not (asked or shown):
        return "I do not know."
    t, q = (asked or shown)[0], prompt.rsplit("Question:", 1)[-1].lower()
    sql = (f"SELECT SUM(amount) FROM {t}" if "total" in q else f"SELECT AVG(amount) FROM {t}" if "average" in q
           else f"SELECT * FROM {t} ORDER BY amount {'ASC' if 'lowest' in q else 'DESC'} LIMIT 3")
    return json.dumps([{"step": 1, "tool": "sql", "input": sql, "depends_on": []}])


@contextmanager
def open_world(tmp: Path, seed: int = 0):
    """Build the knowledge base (3 reports, a table and a causes document a tenant; 2 reports, a table and causes
    untagged; the graph, causal links) and serve it; yields the World."""
    from fastapi.testclient import TestClient

    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    settings = {"embedder": "fake", "judge": "lexical", "cache_dir": tmp / "cache", "causal_links": True}
    w = World(None, tmp, tmp / "kb", seed)
    with Clinic.open(tmp / "kb", llm="none", graph="fast", **settings) as c:
        for owner, names in NAMES.items():
            folder = tmp / "docs" / (owner or "shared")
            folder.mkdir(parents=True)
            for i, topic in enumerate(("supply", "safety", "audit")[: 3 if owner else 2]):
                picked = [names[(i + j) % len(names)] for j in range(4)]
                text = document(picked, [w.new_marker(owner) for _ in range(4)], topic)
                w.texts.append((owner, text))
                (folder / f"{topic}.md").write_text(text, encoding="utf-8")
            w.owned[owner].columns.append(w.new_marker(owner))
            extra = {"table.csv": table(names, w.owned[owner].columns[-1], [w.new_marker(owner) for _ in names],
                                        len(w.texts)),
                     "causes.md": causes(names[1:], [w.new_marker(owner) for _ in range(2)])}
            for name, text in extra.items():
                w.texts.append((owner, text))
                (folder / name).write_text(text, encoding="utf-8")
            c.ingest(folder, tags={"tenant": owner} if owner else None)
    for owner, names in NAMES.items():
        w.owned[owner].names.extend(names)
    app = create_app(Settings.load(tmp / "kb", llm="none", **settings), Keys(KEY_SPECS),
                     model=ScriptedLanguageModel([_reply], yes_prob=0.9), max_upload_mb=1)
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback Host, as allowed_hosts expects
        w.client = client
        w.refresh()
        if empty := [o or "admin" for o, x in w.owned.items() if not (x.chunks and x.tables)]:
            raise RuntimeError(f"the ingest stored no chunks or no table for {empty}: the property would test nothing")
        yield w
