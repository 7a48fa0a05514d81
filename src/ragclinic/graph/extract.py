"""The ``fast`` extractor: entities and relations without a language model.

- English: named entities are runs of capitalised words and acronyms (a sentence's first word only when it is an
  acronym, has a digit or is capitalised elsewhere in the chunk); noun phrases are runs of two or three content words
  (each two-word phrase of the run kept; only those found in two chunks enter the partition). Organisation suffixes ("Components", "Ltd",
  "University") type a name as an organisation.
- Chinese: jieba's part-of-speech tags — nr person, ns location, nt organisation, nz other proper nouns — a
  proper noun followed by an organisation word (集团, 公司, 精密, 研究院 ...) is one organisation; runs of nouns are
  noun phrases.
- Relations: two entities in one sentence co-occur (weight 1 per sentence, the sentence as the description).
- Merging: entities merge by normalised name (case, "the", possessives, plurals of phrases, traditional → simplified
  Chinese), and within a document a lone surname or first word of a longer name merges into that name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from itertools import combinations

from ragclinic.store.graph import ChunkGraph, Mention, Relation
from ragclinic.text.analyzer import STOPWORDS, jieba_handle
from ragclinic.text.lang import simplified
from ragclinic.text.sentences import split_sentences

MAX_PER_SENTENCE = 10  # entities of one sentence paired (10 → 45 relations)
_DESCRIPTION_CHARS = 240

_TOKEN = re.compile(r"[^\W\d_][\w'’\-&.]*[^\W_]|[^\W\d_]|\d+[^\W\d_][\w\-]*")  # letters of any Latin script
_CONNECTORS = {"of", "for", "de", "van", "von", "&", "la", "del", "der"}
_LEAD_WORDS = {w.capitalize() for w in STOPWORDS} | {
    "However", "Although", "While", "After", "Before", "During", "Since", "Because", "Each", "Every", "Both",
    "Many", "Most", "Some", "Several", "Other", "Others", "Overall", "Finally", "First", "Second", "Third", "Last",
    "Next", "Later", "Meanwhile", "Despite", "Following", "Under", "Over", "Between", "Among", "Across", "Until",
    "Unlike", "Like", "Yet", "Still", "Thus", "Therefore", "Instead", "Here", "Only", "All", "One", "Two", "Three",
    "Its", "Their", "His", "Her", "Our", "We", "They", "He", "She", "It", "I", "You", "Mr", "Ms", "Mrs", "Dr",
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Q1", "Q2", "Q3", "Q4",
}
_TITLES = {"Mr", "Ms", "Mrs", "Dr", "Prof", "Sir"}
_NOT_NAMES = {"January", "February", "March", "April", "June", "July", "August", "September", "October", "November",
              "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
_ORG_WORDS = {
    "inc", "ltd", "llc", "plc", "gmbh", "ag", "co", "corp", "corporation", "company", "group", "holdings",
    "components", "systems", "technologies", "industries", "logistics", "shipping", "marine", "bank", "university",
    "institute", "hospital", "agency", "authority", "department", "ministry", "council", "committee", "foundation",
    "association", "laboratory", "laboratories", "labs", "partners", "services", "solutions", "energy", "steel",
}
_NP_STOP = STOPWORDS | {
    "said", "says", "also", "very", "more", "most", "less", "least", "much", "many", "such", "other", "each", "every",
    "some", "any", "all", "both", "few", "several", "new", "same", "own", "per", "one", "two", "three", "first",
    "last", "next", "year", "years", "month", "months", "week", "weeks", "day", "days", "time", "times", "way",
    "part", "percent", "use", "used", "using", "made", "make", "makes", "take", "took", "taken", "found", "show",
    "shows", "showed", "shown", "well", "however", "within", "without", "after", "before", "during", "about",
    "over", "under", "between", "through", "against", "among", "while", "since", "until", "because", "whether",
    "there", "here", "now", "then", "yet", "still", "even", "just", "only", "again", "further", "according",
    "including", "include", "includes", "included", "became", "become", "becomes", "remain", "remained", "led",
    "must", "shall", "need", "needs", "had", "has", "have", "having", "was", "were", "is", "are", "been", "being", "grown", "known", "given", "shown",
    "taken", "seen", "done", "gone", "begun", "written", "driven", "risen", "fallen", "chosen", "held", "kept",
}

# Chinese: part-of-speech tags
_ZH_PROPER = {"nr": "person", "nrfg": "person", "nrt": "person", "ns": "location", "nt": "organisation",
              "nz": "name"}
_ZH_NOUN = {"n", "nz", "ns", "nt", "nr", "nrt", "nrfg", "vn", "eng", "i", "nw"}
_ZH_ORG = {"公司", "集团", "科技", "精密", "股份", "有限公司", "银行", "大学", "学院", "研究院", "研究所", "医院",
           "中心", "委员会", "协会", "实验室", "工厂", "制药", "药业", "电子", "电气", "机械", "物流", "地铁", "铁路",
           "局", "厅", "部", "署", "院", "所", "厂", "站"}
_ZH_GENERIC = {"时候", "情况", "方面", "问题", "工作", "部分", "方式", "过程", "结果", "内容", "时间", "事情", "东西",
               "地方", "人员", "人们", "记者", "我们", "他们", "今年", "去年", "明年"}


def normalise(name: str, kind: str = "name") -> str:
    """The key entities merge by: NFKC, simplified Chinese, lower case, no leading "the", no possessive, a
    phrase's last word singular."""
    s = simplified(unicodedata.normalize("NFKC", name)).strip().lower().replace("’", "'")
    s = re.sub(r"\s+", " ", s)
    s = re.sub(r"^the ", "", s)
    s = re.sub(r"'s$", "", s)
    if kind == "phrase" and s.isascii():
        words = s.split(" ")
        words[-1] = _singular(words[-1])
        s = " ".join(words)
    return s


def _singular(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "ics")):
        return w[:-1]
    return w


# ---------------------------------------------------------------------------- English
def english_entities(sentence: str, capitalised_elsewhere: set[str]) -> list[tuple[str, str]]:
    """(name, type) of one English sentence, in order."""
    toks = [(m.group().rstrip("."), m.start()) for m in _TOKEN.finditer(sentence)]
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(toks):
        w = toks[i][0]
        if _capitalised(w) and not (i == 0 and w in _LEAD_WORDS) and w not in _TITLES and w not in _NOT_NAMES:
            j = i + 1
            while j < len(toks):
                nxt = toks[j][0]
                if _capitalised(nxt) and nxt not in _LEAD_WORDS and nxt not in _NOT_NAMES:
                    j += 1
                elif nxt.lower() in _CONNECTORS and j + 1 < len(toks) and _capitalised(toks[j + 1][0]) \
                        and toks[j + 1][0] not in _LEAD_WORDS:
                    j += 2
                else:
                    break
            words = [t[0] for t in toks[i:j]]
            if i == 0 and len(words) == 1 and not _strong(w) and w not in capitalised_elsewhere:
                i = j
                continue
            name = " ".join(words)
            out.append((name, _name_type(words)))
            i = j
            continue
        if _strong(w):  # a lower-case term with digits: p53, covid-19
            out.append((w, "acronym"))
        i += 1
    return out + _noun_phrases(toks)


def _capitalised(w: str) -> bool:
    return w[:1].isupper() and (len(w) > 1 or w == "I") and w != "I"


def _strong(w: str) -> bool:
    """An acronym or a term with a digit: a name wherever it stands (NASA, IL-6, COVID-19, p53)."""
    letters = [c for c in w if c.isalpha()]
    return (len(letters) >= 2 and all(c.isupper() for c in letters)) or \
        (any(c.isdigit() for c in w) and any(c.isalpha() for c in w))


def _name_type(words: list[str]) -> str:
    if all(_strong(w) for w in words):
        return "acronym"
    if words[-1].lower().rstrip(".") in _ORG_WORDS:
        return "organisation"
    return "name"


def _noun_phrases(toks: list[tuple[str, int]]) -> list[tuple[str, str]]:
    out, run = [], []
    for w, _ in toks + [("", 0)]:
        lw = w.lower()
        if w and w.isalpha() and w.islower() and len(w) > 2 and lw not in _NP_STOP and not lw.endswith("ly") \
                and not (len(lw) > 4 and lw.endswith("ed") and not lw.endswith("eed")):  # a verb ends the phrase
            run.append(lw)
            continue
        out += [(f"{a} {b}", "phrase") for a, b in zip(run, run[1:])][-3:]  # every two-word phrase of the run
        run = []
    return out


# ---------------------------------------------------------------------------- Chinese
def chinese_entities(sentence: str) -> list[tuple[str, str]]:
    pairs = [(w.word, w.flag) for w in _posseg().cut(sentence)]
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pairs):
        word, flag = pairs[i]
        if flag in _ZH_PROPER and len(word) >= 2:
            j, kind = i + 1, _ZH_PROPER[flag]
            while j < len(pairs) and pairs[j][0] in _ZH_ORG:  # 华联 + 精密, 北京地铁 + 集团
                j, kind = j + 1, "organisation"
            out.append(("".join(p[0] for p in pairs[i:j]), kind))
            i = j
            continue
        if flag in _ZH_NOUN and flag != "vn":
            j = i
            while j < len(pairs) and pairs[j][1] in _ZH_NOUN and pairs[j][1] not in _ZH_PROPER:
                j += 1
            phrase = "".join(p[0] for p in pairs[i:j])
            if 2 <= len(phrase) <= 8 and phrase not in _ZH_GENERIC and not phrase.isascii():
                out.append((phrase, "phrase"))
            elif phrase.isascii() and _strong(phrase):
                out.append((phrase, "acronym"))
            i = max(j, i + 1)
            continue
        i += 1
    return out


def _posseg():
    jieba_handle()
    import jieba.posseg  # on use: loads jieba's part-of-speech dictionary

    return jieba.posseg


# ---------------------------------------------------------------------------- chunks
def extract_chunks(chunks: Sequence[tuple[str, str, str, str]]) -> list[ChunkGraph]:
    """(chunk_id, doc_id, text, language) → one ChunkGraph each; a document's chunks should come together, so
    its short names merge into its full ones."""
    found: list[tuple[str, str, list[list[tuple[str, str]]], list[str]]] = []
    for chunk_id, doc_id, text, language in chunks:
        spans = split_sentences(text, language="zh" if language == "zh" else None)
        sentences = [text[a:b] for a, b in spans]
        elsewhere = _capitalised_mid_sentence(sentences) if language != "zh" else set()
        per = [chinese_entities(s) if language == "zh" else english_entities(s, elsewhere) for s in sentences]
        found.append((chunk_id, doc_id, per, sentences))
    aliases = _aliases(found)
    return [_chunk_graph(chunk_id, doc_id, per, sentences, aliases.get(doc_id, {}))
            for chunk_id, doc_id, per, sentences in found]


def _capitalised_mid_sentence(sentences: list[str]) -> set[str]:
    return {m.group() for s in sentences for m in list(_TOKEN.finditer(s))[1:] if _capitalised(m.group())}


def _aliases(found) -> dict[str, dict[str, str]]:
    """Per document: a one-word name → the longer name it begins or ends (Solberg → Ingrid Solberg), when that
    longer name is the only one it could be."""
    longer: dict[str, dict[str, set[str]]] = {}
    for _, doc_id, per, _ in found:
        for names in per:
            for name, kind in names:
                words = name.split(" ")
                if kind != "phrase" and len(words) >= 2:
                    for w in (words[0], words[-1]):
                        longer.setdefault(doc_id, {}).setdefault(normalise(w), set()).add(name)
    return {d: {short: next(iter(full)) for short, full in m.items() if len(full) == 1} for d, m in longer.items()}


def _chunk_graph(chunk_id: str, doc_id: str, per: list[list[tuple[str, str]]], sentences: list[str],
                 aliases: dict[str, str]) -> ChunkGraph:
    mentions: list[Mention] = []
    weights: dict[tuple[str, str], list] = {}
    for idx, names in enumerate(per):
        keys: dict[str, None] = {}
        for name, kind in names:
            if kind != "phrase" and " " not in name and normalise(name) in aliases:
                name = aliases[normalise(name)]
            key = normalise(name, kind)
            if len(key) < 2 or key in keys:
                continue
            keys[key] = None
            mentions.append(Mention(key, name, kind, idx))
        for a, b in combinations(sorted(list(keys)[:MAX_PER_SENTENCE]), 2):
            slot = weights.setdefault((a, b), [0.0, sentences[idx]])
            slot[0] += 1.0
    relations = tuple(Relation(a, b, "co-occurs", _describe(d), w) for (a, b), (w, d) in weights.items())
    return ChunkGraph(chunk_id, doc_id, tuple(mentions), relations)


def _describe(sentence: str) -> str:
    s = " ".join(sentence.split())
    return s if len(s) <= _DESCRIPTION_CHARS else s[:_DESCRIPTION_CHARS - 1] + "…"
