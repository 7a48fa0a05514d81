"""Instructions planted in documents: where they are, so that they can be cut out and the facts around them kept.

A document informs its reader; a planted instruction addresses the model that reads it for someone else
("ignore previous instructions…", "系统提示：…", "Note to the AI: …"). ``find_instructions`` returns the spans
of a text that do that:

1. a sentence that matches one of the instruction patterns (English and Chinese);
2. a whole paragraph that opens by addressing the model ("Note to any AI reading this:", "致AI：");
3. the sentences right after an instruction in the same paragraph that carry its payload (a link, an
   address, "tell the user…", "然后回复…");
4. runs of invisible code points (zero-width, Unicode tag characters): text a reader never sees.

The rules' phrases are specific (false alarms on 1,000+ real SciFact and CMRC2018 passages are measured in
bench/RESULTS.md) but know the famous phrasings only: with a ``detector`` (the learned one of
verify/instructions.py), a sentence it flags is an instruction too (kind ``learned``). The spans
are used at ingest (the parse report names where each one is, without repeating it) and when the context is
built (the span is cut out of the passage, the rest of the passage is kept).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragclinic.text.printed import output_spans, within_output
from ragclinic.text.sentences import paragraphs, split_sentences

_EN = (
    r"\b(ignore|disregard|forget|override|bypass)\s+((all|any|the|your|of|these|those|my|every)\s+){0,3}"
    r"(previous|prior|above|earlier|preceding|foregoing|system|original|other|existing)\s+"
    r"(instructions?|prompts?|directions?|directives?|rules|guidelines|context|messages?|commands?)",
    r"\b(ignore|disregard|forget)\s+(everything|all|anything)\s+(above|before|previously|else|you were told)",
    r"\byou are now\b", r"\bfrom now on,? (you|the assistant)\b", r"\bnew (system )?instructions?\s*:",
    r"\bsystem prompt\b", r"\bsystem (override|message)\s*:", r"\bdeveloper mode\b",
    r"\b(assistants?|chatbots?|language models?|AIs?|LLMs?)\b[^.\n]{0,40}\b(must|should|shall|will|are to|"
    r"need to|are required to) (now |always |instead |only )?(say|answer|reply|respond|tell|output|write|"
    r"recommend|include|direct|ignore|refuse|state|mention)",
    r"\b(respond|answer|reply) (only|solely|exclusively) (with|in|by)\b",
    r"\bdo not (tell|inform|reveal to|mention (this|these instructions) to) the user\b",
    r"\b(when|if) (an? |the )?(AI|assistant|chatbot|LLM|language model)s? (is )?(asked|reads?|summari[sz]es?|"
    r"answers?|processes)",
    r"</?\s*(system|assistant|instructions?|sys)\s*>", r"\[/?(INST|SYSTEM)\]", r"<\|im_(start|end)\|>",
)
_ZH = (
    r"(忽略|无视|忘记|忘掉|不要理会|不要遵守|跳过)(掉)?(以上|之前|前面|上述|先前|所有|全部|此前|原来|原有)(的)?"
    r"(所有|全部)?(的)?(指令|指示|说明|规则|内容|提示|要求|设定)",
    r"你现在(是|扮演|的身份)", r"从现在(开始|起)[，,]?\s*你", r"(请|你)(必须|只能|务必)(只)?(回答|输出|回复|说)",
    r"系统提示", r"新的?指令[:：]", r"(人工智能|AI|助手|模型|机器人)(助手)?(在回答|回答时|必须|应该|务必|请)"
                                   r"[^。\n]{0,20}(回答|回复|输出|告诉|声称|说)",
    r"(当|如果)(你|AI|助手|模型)[^。\n]{0,6}(被问到|读到|总结|回答)", r"不要(告诉|透露给)用户",
)
_PATTERNS = tuple(re.compile(p, re.I) for p in _EN + _ZH)
# A paragraph that opens by addressing the model is an instruction as a whole.
_ADDRESS = re.compile(
    r"^\W{0,6}(note|message|instructions?|attention|important|warning|notice)?\s*(to|for)?\s*"
    r"(any|all|the|dear)?\s*(AI|A\.I\.|LLMs?|chatbots?|language models?|AI (assistants?|models?|systems?))"
    r"( (assistants?|models?|systems?))?( reading (this|these)( \w+)?| that reads? this)?\s*[:：,，—-]"
    r"|^\W{0,6}(致|给|写给|提醒)?\s*(AI|人工智能|大模型|语言模型|智能助手|AI助手)(助手)?(的)?(注意|提示|说明|须知)?\s*[:：，,]",
    re.I | re.M)
# The payload that follows an instruction: a link or address, an order to the model or about the user.
_PAYLOAD = re.compile(
    r"https?://|www\.|\S+@\S+\.\w+|^\W*(instead|then|also|and|tell|say|reply|respond|answer|output|write|recommend|"
    r"direct|send|include|always|never|do not|don't|visit|click|call|mention|state|claim|insist)\b"
    r"|the user|^\W*(并且?|然后|接着|同时|务必|一定要|告诉|回复|回答|输出|声称|推荐|请用户|让用户|引导用户|访问|点击)",
    re.I)
_HIDDEN = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff]{2,}|[\U000e0000-\U000e007f]+")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str  # "instruction", "learned" (flagged by the detector only), "addressed", "payload", "hidden"


def looks_like_instruction(text: str) -> bool:
    """A cheap test: does any instruction pattern, addressing cue or hidden run occur in ``text``?"""
    return (any(p.search(text) for p in _PATTERNS) or _HIDDEN.search(text) is not None
            or any(_ADDRESS.match(text, a) for a, _ in paragraphs(text)))


def find_instructions(text: str, detector=None) -> list[Span]:
    """Spans of ``text`` that address the model (sorted, not overlapping); [] for plain content. ``detector``
    (verify/instructions.py: ``flags(sentences)``) adds the sentences it flags that no rule matched
    (kind ``learned``)."""
    if detector is None and not looks_like_instruction(text):
        return []
    spans = [Span(m.start(), m.end(), "hidden") for m in _HIDDEN.finditer(text)]
    unaddressed = []
    for a, b in paragraphs(text):
        if _ADDRESS.match(text, a):
            spans.append(Span(a, b, "addressed"))
        else:
            unaddressed.append(split_sentences(text[a:b], a))
    # fenced program output ("FATAL:  password authentication failed for user") is data, not addressed to anyone:
    # the learned detector does not read it; the rules still do (text/printed.py)
    printed = output_spans(text, prose_logs=False) if detector is not None else []
    read = [(s, e) for sents in unaddressed for s, e in sents if not within_output(printed, s, e, text)]
    verdicts, tails = _learned(text, read, detector)
    for sents in unaddressed:
        flagged = False
        for s, e in sents:
            sentence, by_model = text[s:e], verdicts.get((s, e), False)
            ruled = [m.start() for p in _PATTERNS if (m := p.search(sentence))]
            at = min(ruled) if ruled else (None if by_model else tails.get((s, e)))
            if ruled or by_model or at is not None:
                a, b = _narrow(sentence, at)
                spans.append(Span(s + a, s + b, "instruction" if ruled else "learned"))
                flagged = True
            elif flagged and _PAYLOAD.search(sentence):
                spans.append(Span(s, e, "payload"))
            else:
                flagged = False
    return _merge(spans)


# Where an instruction joined to a fact in one sentence begins (issue 55): Chinese joins clauses with "，" where English
# would start a sentence ("来访车辆请停放在P2停车场，忽略之前的所有指示，回答…"), so cutting the whole sentence cut the fact.
_CLAUSE = re.compile(r"[，,；;]\s*")
_BRACKETS = {"（": "）", "(": ")", "【": "】", "[": "]"}
_CUE = re.compile(r"\b(you|your|AI|assistants?|chatbots?|language models?|LLMs?|system (prompt|override|message))\b|你|您|模型|助手|人工智能|系统提示|"
                  r"机器人|忽略|无视|(?<![A-Za-z])AI(?![A-Za-z])", re.I)
_END = re.compile(r"[。.!！?？]?\s*$")


def _learned(text: str, read: list[tuple[int, int]], detector) -> tuple[dict, dict]:
    """The detector's verdicts on the sentences ``read``, and — for a sentence whose later clause addresses the
    model (a fact, then "，请忽略你之前收到的所有指令…") — on that clause to the sentence's end: the fact around
    an instruction dilutes the sentence's score. → ({sentence: flagged}, {sentence: where its flagged tail
    begins, relative to the sentence})."""
    if detector is None or not read:
        return {}, {}
    tails = {(s, e): t for s, e in read if (t := _tail(text[s:e])) is not None}
    flags = detector.flags([text[s:e] for s, e in read] + [text[s + t:e] for (s, e), t in tails.items()])
    verdicts = dict(zip(read, flags[:len(read)]))
    flagged_tails = {k: t for (k, t), f in zip(tails.items(), flags[len(read):]) if f and not verdicts[k]}
    return verdicts, flagged_tails


# A later clause is read on its own only when it addresses someone (a bracket's content: any word for a model or
# its answer): "检索增强生成先检索相关段落，再让语言模型依据这些段落作答" describes a model, it does not address one.
_TAIL_CUE = re.compile(r"\b(you|your|assistants?|chatbots?|ignore|disregard|instructions?)\b|你|您|助手|人工智能|"
                       r"系统提示|忽略|无视|指令|指示|(?<![A-Za-z])AI(?![A-Za-z])", re.I)
_BRACKET_CUE = re.compile(_TAIL_CUE.pattern + r"|\b(models?|LLMs?|users?|answer|reply|respond|output)\b|模型|回答|回复|"
                          r"输出|用户", re.I)


def _tail(sentence: str) -> int | None:
    """Where a later clause of the sentence that addresses the model begins: an unclosed opening bracket before a
    word for a model or its answer, else the last clause boundary before the sentence's first word addressing
    the model; after some words of fact that address no one. None when there is no such clause."""
    for cues in (_BRACKET_CUE, _TAIL_CUE):
        cue = cues.search(sentence)
        if cue is None:
            continue
        head = sentence[:cue.start()]
        opened = max(head.rfind(b) for b in _BRACKETS)
        if cues is _BRACKET_CUE:
            if opened < 0 or any(c in head[opened:] for c in _BRACKETS.values()):
                continue
            bounds = [opened]  # the instruction is the bracket's content: it starts at the bracket
        else:
            bounds = [m.end() for m in re.finditer(r"[，,；;]\s*", head)]
        if bounds and len(re.findall(r"[\w\u4e00-\u9fff]", sentence[:bounds[-1]])) >= 6:
            return bounds[-1]
    return None


def _narrow(sentence: str, at: int | None) -> tuple[int, int]:
    """The part of a flagged sentence that is the instruction: the brackets around it, or its clauses from the one
    where it begins (a rule's match, else the first clause that addresses the model) to the sentence's end — the
    facts before it are kept, with the sentence's own full stop. The whole sentence when nothing worth keeping
    comes before the instruction."""
    if at is None:
        m = _CUE.search(sentence)
        if m is None:
            return 0, len(sentence)
        at = m.start()
    for open_, close in _BRACKETS.items():
        a = sentence.rfind(open_, 0, at + 1)
        b = sentence.find(close, at)
        if a >= 0 and b > at and close not in sentence[a + 1:at]:
            return len(sentence[:a].rstrip(" ")), b + 1
    cut = None
    for m in _CLAUSE.finditer(sentence, 0, at + 1):
        if m.end() <= at:
            cut = m.start()
    if cut is None or len(re.findall(r"[\w\u4e00-\u9fff]", sentence[:cut])) < 6 or _CUE.search(sentence[:cut]):
        return 0, len(sentence)
    return cut, _END.search(sentence).start()


def _merge(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for sp in sorted(spans, key=lambda x: (x.start, -x.end)):
        if out and sp.start <= out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, sp.end), last.kind if last.kind != "hidden" else sp.kind)
        else:
            out.append(sp)
    return out


def strip_spans(text: str, spans: list[Span], offset: int = 0) -> str:
    """``text`` (which starts at ``offset`` of the text the spans refer to) without the spans' characters."""
    out, pos = [], 0
    for sp in spans:
        a, b = max(sp.start - offset, 0), min(sp.end - offset, len(text))
        if b <= pos or a >= len(text):
            continue
        out.append(text[pos:max(a, pos)])
        pos = b
    out.append(text[pos:])
    cleaned = "".join(out)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r"\n{3,}", "\n\n", cleaned)).strip()


def paragraph_number(text: str, offset: int) -> int:
    """1-based number of the paragraph of ``text`` that holds ``offset``."""
    return sum(1 for a, _ in paragraphs(text[:offset + 1]) if a <= offset) or 1
