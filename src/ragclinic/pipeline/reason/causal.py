"""Causal questions (issue 17 §3) over a knowledge base ingested with ``--causal``: causal-aware ranking of the hits,
the stated chain "A → B → C" with the passages it rests on, and the evidence's strength.

- Ranking (scope layer): score = α·similarity (the hit's min-max normalised score) + β·chain match (the best
  overlap of the question with a link the chunk states, or with a link one hop from such a link) + γ·recency
  (the document's ``date`` tag, newest = 1), weights ``causal_weights``. Chunks that state a link one hop from a
  matched link join the candidates, so the chain's middle is in the context even when the question never names it.
  Only the links of chunks the question's scope admits count (issue 32): its key's tenant, its scope filters, the
  version policy, quarantine — the links of every tenant share one table, and a link from outside would add its
  chunk, or rank the tenant's chunks by another tenant's text, and the scope span would record its chunk id.
- Chain (generate layer): from the link that matches the question best, walk back through links whose effect is
  its cause and forward through links whose cause is its effect (≤ 3 hops each way); a chain follows the stated
  direction only, so it cannot run backwards.
- Strength: ``strong`` (a stated, unhedged link), ``limited`` (only hedged links), ``conflicting`` (links that
  state opposite effects of one cause, or both directions between two things); with no link stated, the answer
  says so and lists the related passages instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ragclinic.store.causal import links_in, links_of
from ragclinic.text.support import content_terms
from ragclinic.types import Hit
from ragclinic.text.causal import extract, sentences

CAUSE_QUESTION = re.compile(r"^\s*why\b|\bwhat (caused|causes|led to|leads to)\b|\breasons?\b|\bdue to what\b|"
                            r"为什么|为何|原因|什么导致|怎么会", re.I)
_UP = re.compile(r"\b(rise|rose|risen|increase[sd]?|grow|grew|higher|more|up|raise[sd]?|boost(ed|s)?|doubled)\b|"
                 r"上涨|增加|上升|提高|增长", re.I)
_DOWN = re.compile(r"\b(fall|fell|fallen|decrease[sd]?|drop(ped)?|shrank|lower(ed|s)?|less|fewer|down|reduce[sd]?|"
                   r"cut|halved|weaken(ed|s)?|slow(ed|s)?)\b|下降|减少|降低|下跌", re.I)
MAX_LINKS = 20000  # links read for the one-hop expansion (a larger KB would index them by term)


@dataclass(frozen=True)
class Chain:
    links: tuple[dict, ...]  # in causal order
    strength: str  # "strong", "limited", "conflicting", "none"
    why: str = ""

    def text(self) -> str:
        if not self.links:
            return ""
        return " → ".join([self.links[0]["cause"]] + [lk["effect"] for lk in self.links])

    def chunk_ids(self) -> list[str]:
        return list(dict.fromkeys(lk["chunk_id"] for lk in self.links))


def enabled(kb) -> bool:
    return kb.db.meta("causal_links") == "1"


def overlap(a: str, b: str) -> float:
    ta, tb = content_terms(a), content_terms(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def scoped_links(kb, admit: Callable[[int, str, str], bool] | None) -> list[dict]:
    """The stored links of the chunks ``admit`` lets in (graph_steps.Admission: its ``allowed`` rowids narrow the
    read, the call checks tenant and quarantine; None: every link); none when more than MAX_LINKS are in scope
    (counted within the scope, so another tenant's links cannot switch a tenant's causal ranking off)."""
    rows = links_in(kb.db.conn, getattr(admit, "allowed", None), MAX_LINKS)
    return [lk for rowid, lk in rows or () if admit is None or admit(rowid, lk["chunk_id"], lk["doc_id"])]


def rank(kb, question: str, hits: Sequence, weights: Sequence[float], docs: dict, *,
         admit: Callable[[int, str, str], bool] | None) -> tuple[list, dict]:
    """The hits re-ranked for a causal question, with the chunks one hop along a matched link added; and what the
    scope span records (the weights, each hit's parts). ``admit`` (rowid, chunk id, doc id) → whether the question's
    scope lets a chunk in; only those chunks' links are read (None only for a caller with no scope at all)."""
    alpha, beta, gamma = weights
    links = scoped_links(kb, admit)
    by_chunk: dict[str, list[dict]] = {}
    for lk in links:
        by_chunk.setdefault(lk["chunk_id"], []).append(lk)
    q_match = {id(lk): max(overlap(question, lk["cause"]), overlap(question, lk["effect"])) for lk in links}
    matched = [lk for lk in links if q_match[id(lk)] >= 0.5]
    hop: dict[str, float] = {}
    for m in matched:  # links one step along a matched link: the chain's other half
        for lk in links:
            same = lk["doc_id"] == m["doc_id"]
            if lk is not m and (_joins(m["cause"], lk["effect"], same) or _joins(m["effect"], lk["cause"], same)):
                hop[lk["chunk_id"]] = max(hop.get(lk["chunk_id"], 0.0), 0.7 * q_match[id(m)])
    have = {h.chunk.id for h in hits}
    extra = [cid for cid in hop if cid not in have]
    pool = list(hits)
    if extra:
        rows = kb.db.conn.execute(f"SELECT rowid FROM chunks WHERE chunk_id IN ({','.join('?' * len(extra))})",
                                  extra).fetchall()
        for rowid, chunk in kb.db.chunks_by_rowid([r[0] for r in rows]).items():
            pool.append(Hit(chunk, 0.0, (), rowid))
        docs.update(kb.db.doc_infos([h.chunk.doc_id for h in pool if h.chunk.doc_id not in docs]))
    scores = [h.score for h in hits] or [0.0]
    lo, hi = min(scores), max(scores)
    dates = sorted({docs[h.chunk.doc_id].tags.get("date", "") for h in pool if h.chunk.doc_id in docs} - {""})
    parts = {}
    for h in pool:
        sim = (h.score - lo) / (hi - lo) if hi > lo and h.chunk.id in have else (1.0 if h.chunk.id in have else 0.0)
        chain = max([q_match[id(lk)] for lk in by_chunk.get(h.chunk.id, [])] + [hop.get(h.chunk.id, 0.0)])
        d = docs.get(h.chunk.doc_id)
        date = d.tags.get("date", "") if d else ""
        recency = (dates.index(date) + 1) / len(dates) if date in dates else 0.0
        parts[h.chunk.id] = (round(alpha * sim + beta * chain + gamma * recency, 4), round(sim, 3), round(chain, 3),
                             round(recency, 3))
    ranked = sorted(pool, key=lambda h: -parts[h.chunk.id][0])
    ranked = [replace(h, score=parts[h.chunk.id][0]) for h in ranked]
    return ranked, {"weights": list(weights), "added_by_chain": extra,
                    "scores": {cid: list(v) for cid, v in parts.items()}}


def chain_for(kb, question: str, chunk_ids: Sequence[str]) -> Chain:
    """The chain the passages ``chunk_ids`` state for ``question`` (only their links: every step is citable)."""
    links = links_of(kb.db.conn, list(chunk_ids))
    if not links:
        return Chain((), "none", "the passages state no cause → effect link")
    seed = _seed(question, links, chunk_ids[0] if chunk_ids else "")
    if seed is None:
        return Chain((), "none", "no stated link is about what the question asks")
    chain = [seed]
    for _ in range(3):  # back: what caused the first cause
        prev = _next_link(links, chain, chain[0], "effect", "cause")
        if prev is None:
            break
        chain.insert(0, prev)
    for _ in range(3):  # forward: what the last effect led to
        nxt = _next_link(links, chain, chain[-1], "cause", "effect")
        if nxt is None:
            break
        chain.append(nxt)
    return Chain(tuple(chain), *_strength(chain, links))


def _seed(question: str, links: list[dict], top_chunk: str) -> dict | None:
    """The link a chain starts from: the one whose cause or effect the question's words cover half of; else
    (issue 55: the rules' link ends are short, a user's words are not the document's) the link of the top-ranked
    passage whose sentence shares most words with the question, when it shares any."""
    def ends(lk: dict) -> float:
        return max(overlap(question, lk["cause"]), overlap(question, lk["effect"]))

    best = max(links, key=ends)
    if ends(best) >= 0.5:
        return best
    top = [lk for lk in links if lk["chunk_id"] == top_chunk]
    near = max(top, key=lambda lk: overlap(question, lk["sentence"]), default=None)
    return near if near is not None and overlap(question, near["sentence"]) > 0 else None


def _joins(a: str, b: str, same_doc: bool) -> bool:
    """Two link ends name the same thing. Across documents one shared word is not enough ("the closure" of a rail
    line is not "the closure" of a steel plant): two shared content words are needed."""
    if overlap(a, b) < 0.5:
        return False
    return same_doc or len(content_terms(a) & content_terms(b)) >= 2


def _next_link(links: list[dict], chain: list[dict], at: dict, end: str, other: str) -> dict | None:
    """The link whose ``end`` joins ``at``'s ``other`` end, one from the same document first."""
    cands = [lk for lk in links if lk not in chain
             and _joins(lk[end], at[other], lk["doc_id"] == at["doc_id"])]
    return min(cands, key=lambda lk: lk["doc_id"] != at["doc_id"]) if cands else None


def _strength(chain: list[dict], links: list[dict]) -> tuple[str, str]:
    """Conflicting only against the chain's own links: another link states the reverse of one, or the same cause
    moving the same thing the other way ("tariffs led to higher prices" / "... lower prices")."""
    for a in chain:
        for b in links:
            if b is a or b["sentence"] == a["sentence"]:
                continue
            if overlap(a["cause"], b["effect"]) >= 0.7 and overlap(a["effect"], b["cause"]) >= 0.7:
                return "conflicting", f"one passage says {a['cause']} → {a['effect']}, another the reverse"
            if (overlap(a["cause"], b["cause"]) >= 0.7 and _opposite(a["effect"], b["effect"])
                    and overlap(_undirected(a["effect"]), _undirected(b["effect"])) >= 0.5):
                return "conflicting", f"{a['cause']}: {a['effect']} vs {b['effect']}"
    if all(lk["hedged"] for lk in chain):
        return "limited", "the link is stated with a hedge (may, could, 可能)"
    return "strong", "the documents state the link"


def _undirected(text: str) -> str:
    return _DOWN.sub(" ", _UP.sub(" ", text))


def _opposite(a: str, b: str) -> bool:
    return bool((_UP.search(a) and _DOWN.search(b)) or (_DOWN.search(a) and _UP.search(b)))


def passage_links(kb, passages: Sequence) -> list[dict]:
    """The links the passages state: stored with their chunks (``--causal``), else read from their text now (the
    rules take ~0.1 ms a sentence, so a plain knowledge base gets the direction check too)."""
    if enabled(kb):
        return links_of(kb.db.conn, [p.chunk.id for p in passages])

    return [{"cause": lk.cause, "effect": lk.effect, "sentence": lk.sentence, "chunk_id": p.chunk.id,
             "doc_id": p.chunk.doc_id, "hedged": lk.hedged, "cue": lk.cue}
            for p in passages for lk in extract(p.chunk.text)]


def _same_link(cause: str, effect: str, lk: dict) -> bool:
    return overlap(cause, lk["cause"]) >= 0.7 and overlap(effect, lk["effect"]) >= 0.7


def fix_direction(text: str, links: Sequence[dict], n_of: dict[str, int]) -> tuple[str, list[dict]]:
    """``text`` with every sentence that states a passage's link backwards ("accidents caused the icy roads" over
    "icy roads caused accidents") replaced by the passage's own sentence, cited; and what was replaced. A link the
    passages state both ways (a conflict, a feedback loop) is left as the model wrote it."""

    out, fixed = [], []
    for sent in sentences(text):
        swap = None
        for said in extract(sent):
            back = [lk for lk in links if _same_link(said.effect, said.cause, lk)]
            if back and not any(_same_link(said.cause, said.effect, lk) for lk in links):
                swap = back[0]
                break
        if swap is None:
            out.append(sent)
            continue
        lead = sent[:len(sent) - len(sent.lstrip())]
        out.append(lead + _cited(_in_full(swap), n_of.get(swap["chunk_id"])) + ("\n" if sent.endswith("\n") else ""))
        fixed.append({"said": sent, "stated": swap["sentence"], "chunk_id": swap["chunk_id"]})
    return ("".join(out) if fixed else text), fixed


def _in_full(link: dict) -> str:
    """The link's sentence, after the sentence its pronoun stands for ("This led to ..." → "Heavy rain flooded the
    valley. This led to ...")."""
    sentence = link["sentence"].strip()
    if link["cause"].lower() in sentence.lower():
        return sentence
    zh = bool(re.search(r"[一-鿿]", sentence))
    return f"{link['cause']}{'。' if zh else '. '}{sentence}"


def _cited(sentence: str, n: int | None) -> str:
    """The sentence with its citation before the closing stop ("... accidents [2]." / "……增加[2]。")."""
    body = sentence.strip()
    if n is None:
        return body
    stop = body[-1] if body and body[-1] in ".!?。！？" else ""
    body = body[:-1] if stop else body
    return f"{body}{'' if re.search(r'[一-鿿]$', body) else ' '}[{n}]{stop or '.'}"
