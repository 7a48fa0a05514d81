"""``injected_instruction``: a retrieved passage that addresses the model instead of informing the reader.

Patterns in English and Chinese ("ignore previous instructions", "you are now", "忽略以上指令", role
tags, "answer only with ...") and hidden text (zero-width or Unicode tag characters, which a reader never
sees but the model reads). Rules only: the phrases are specific, and a false alarm costs one re-run.
"""

from __future__ import annotations

import re

from ragclinic.doctor.symptoms import DETECTORS, Exam, Symptom

_PATTERNS = [re.compile(p, re.I) for p in (
    r"\b(ignore|disregard|forget|override)\s+((all|any|the|your|of|these|those|my)\s+){0,3}(previous|prior|above|earlier|"
    r"preceding|foregoing|system|original)\s+(instructions?|prompts?|directions?|rules|context|messages?)",
    r"\b(ignore|disregard|forget)\s+(everything|all)\s+(above|before|previously)",
    r"\byou are now\b", r"\bfrom now on,? you\b", r"\bnew (system )?instructions?\s*:", r"\bsystem prompt\b",
    r"\b(assistant|chatbot|language model|AI)\b[^.\n]{0,25}\b(must|should|will) (now )?(say|answer|reply|respond|"
    r"tell|output)", r"\b(respond|answer|reply) only with\b", r"\bdo not (tell|inform|reveal to) the user\b",
    r"</?\s*(system|assistant|instructions?)\s*>", r"\[/?INST\]", r"<\|im_start\|>",
    r"(忽略|无视|忘记|忘掉|不要理会)(掉)?(以上|之前|前面|上述|先前|所有)(的)?(所有)?(指令|指示|说明|规则|内容|提示)",
    r"你现在(是|扮演)", r"从现在(开始|起)，?你", r"(请|你)(必须|只能)(回答|输出|回复)", r"系统提示", r"新的指令[:：]",
)]
_HIDDEN = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff]{2,}|[\U000e0000-\U000e007f]+")


def find_injection(text: str) -> str:
    """The suspicious snippet, or '' when the text reads as plain content."""
    for p in _PATTERNS:
        if m := p.search(text):
            a = max(0, m.start() - 20)
            return text[a:m.end() + 20].strip()
    if m := _HIDDEN.search(text):
        return f"hidden characters ({len(m.group())} invisible code points) at offset {m.start()}"
    return ""


@DETECTORS.register("injected_instruction")
class InjectedInstruction:
    name, layer, tier = "injected_instruction", "scope", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        found = [(p, s) for p in exam.passages if (s := find_injection(p.chunk.text))]
        if not found:
            return Symptom(self.name, 0.0, self.layer, "no passage addresses the model")
        ev = "; ".join(f"[{p.n}] {p.doc.title or p.doc.path or p.chunk.doc_id}: “{s[:80]}”" for p, s in found)
        return Symptom(self.name, 1.0, self.layer, ev,
                       data={"chunks": [p.chunk.id for p, _ in found], "titles": [p.doc.title or p.doc.path for p, _ in found]})
