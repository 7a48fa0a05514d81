"""``ocr_low_confidence`` (issue 39): a passage the answer rests on was read by OCR from a page the engine read with
low confidence (its parse report's ``ocr_pages``) — its words, numbers above all, may be misread. A parse-layer
symptom: what can be done at query time is to look for a cleaner source of the same fact (a wider search); the
lasting fix is a better scan (300 dpi) or a copy with a text layer, which the evidence says."""

from __future__ import annotations

from ragclinic.doctor.symptoms import DETECTORS, Exam
from ragclinic.ingest.parse.ocr import LOW_CONFIDENCE, stored_pages
from ragclinic.types import Symptom


@DETECTORS.register("ocr_low_confidence")
class OcrLowConfidence:
    name, layer, tier = "ocr_low_confidence", "parse", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        if exam.kb is None:
            return None
        cited = {c.chunk_id for c in exam.answer.citations} if exam.answer is not None else set()
        passages = [p for p in exam.passages if not cited or p.chunk.id in cited]
        low = []
        reports = stored_pages(exam.kb.db, {p.chunk.doc_id for p in passages})
        for p in passages:
            for o in reports.get(p.chunk.doc_id, ()):
                conf = o.get("confidence")
                if conf is not None and conf < LOW_CONFIDENCE and p.chunk.page in (None, o.get("page")):
                    low.append((p, o))
                    break
        if not low:
            return Symptom(self.name, 0.0, self.layer, "no passage comes from a page OCR read with low confidence")
        p, o = low[0]
        where = (f"page {o['page']} of " if p.chunk.page is not None else "a page of ") + (p.doc.title or p.doc.path)
        return Symptom(self.name, 0.7, self.layer,
                       f"passage [{p.n}] was read by OCR from {where} with mean confidence {o['confidence']:.0f} "
                       f"(under {LOW_CONFIDENCE:.0f}): its words may be misread; a 300 dpi scan or a copy with a text "
                       "layer fixes it", data={"passages": [x.n for x, _ in low]})
