"""``injected_instruction``: a retrieved passage that addresses the model instead of informing the reader.

The scope layer already cuts such spans out of passages (``pipeline/scope/instructions.py``: patterns in
English and Chinese, paragraphs addressed to "the AI", payload sentences, invisible code points); its
exclusions ``instruction_removed`` / ``instruction`` name where they were. The symptom is raised for those,
naming the documents and places and never the instruction itself, and for any passage that still holds one
(``strip_instructions`` off, or a knowledge base searched by a plugin): only those need the quarantine.
"""

from __future__ import annotations

from ragclinic.doctor.symptoms import DETECTORS, Exam
from ragclinic.types import Symptom
from ragclinic.pipeline.scope import INSTRUCTION_RULES as REMOVAL_RULES
from ragclinic.text.injection import find_instructions
from ragclinic.verify.instructions import detector_for



def find_injection(text: str, detector=None) -> str:
    """Where in ``text`` an instruction to the model sits ("characters 120–188 (instruction)"), or ''."""
    spans = find_instructions(text, detector)
    return "; ".join(f"characters {sp.start}–{sp.end} ({sp.kind})" for sp in spans)


@DETECTORS.register("injected_instruction")
class InjectedInstruction:
    name, layer, tier = "injected_instruction", "scope", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        removed = [e for e in exam.state.excluded if e.rule in REMOVAL_RULES]
        detector = detector_for(getattr(exam.settings, "instruction_detector", "rules"))
        left = [(p, s) for p in exam.passages if (s := find_injection(p.chunk.text, detector))]
        named = {e.doc_id for e in removed} | {p.chunk.doc_id for p, _ in left}
        unseen = {p.chunk.doc_id: p for p in exam.passages if p.chunk.doc_id not in named}
        hidden = _hidden_instructions(exam.kb.db.conn, list(unseen)) if exam.kb is not None else {}
        if not removed and not left and not hidden:
            return Symptom(self.name, 0.0, self.layer, "no passage addresses the model")
        notes = [e.reason for e in removed]
        notes += [f"[{unseen[d].n}] {unseen[d].doc.title or unseen[d].doc.path}: {n} instruction(s) to the assistant "
                  f"in text a reader cannot see were left out of the index at ingest" for d, n in hidden.items()]
        notes += [f"[{p.n}] {p.doc.title or p.doc.path or p.chunk.doc_id}: still in the context at {s}" for p, s in left]
        titles = [p.doc.title or p.doc.path for p, _ in left] + [unseen[d].doc.title or unseen[d].doc.path
                                                                 for d in hidden]
        if removed and exam.kb is not None:
            infos = exam.kb.db.doc_infos([e.doc_id for e in removed])
            titles += [(infos[e.doc_id].title or infos[e.doc_id].path) if e.doc_id in infos else e.doc_id
                       for e in removed]
        return Symptom(self.name, 1.0, self.layer, "; ".join(notes),
                       data={"chunks": [p.chunk.id for p, _ in left], "titles": list(dict.fromkeys(titles)),
                             "removed": [e.chunk_id for e in removed],
                             "hidden": list(dict.fromkeys(unseen[d].doc.title or unseen[d].doc.path for d in hidden))})


def _hidden_instructions(conn, doc_ids: list[str]) -> dict[str, int]:
    """Documents whose parse report counted planted instructions (hidden text included), by doc id."""
    if not doc_ids:
        return {}
    rows = conn.execute("SELECT doc_id, json_extract(parse_report, '$.instructions') FROM documents WHERE doc_id IN "
                        f"({','.join('?' * len(doc_ids))})", doc_ids)
    return {d: int(n) for d, n in rows if n}
