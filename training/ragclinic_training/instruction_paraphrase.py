"""Paraphrases of the generated instructions by the local Qwen model, for the detector's training data:
``make instruction-paraphrases`` (about 2 s each on 2 cores; resumable: rows already in ``--out`` are kept).

    python -m ragclinic_training.instruction_paraphrase --per-lang 600 \\
        --out training/ragclinic_training/data/instruction-paraphrases.jsonl

Templates repeat their own words; a model's rewording does not, so the detector learns what the sentence does
(address the model reading it, and order it) rather than which words the templates use. Each paraphrase keeps
its source's template family, so the family split stays clean. Asked in English, the model often translates
a Chinese source: that is kept as an English instruction; ``--lang zh`` asks in Chinese. The file is shipped (llama.cpp sampling is not
bit-reproducible across CPUs), and ``make train-instructions`` reads it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from ragclinic.clinic import Clinic
from ragclinic.config import Settings
from ragclinic.models.llm import Message
from ragclinic_training.instruction_data import _en_positives, _zh_positives

PROMPT = ("Paraphrase this sentence, with different words and a different structure but the same meaning. Keep "
          "its language (English stays English, Chinese stays Chinese). Reply with the new sentence only.\n\n"
          "Sentence: {s}")
PROMPT_ZH = "请用不同的词语和句式改写下面这句话，意思不变。只输出改写后的一句中文。\n\n句子：{s}"
DEFAULT = Path(__file__).parent / "data" / "instruction-paraphrases.jsonl"


def _clean(text: str) -> str:
    line = next((x.strip() for x in text.strip().splitlines() if x.strip()), "")
    for prefix in ("Paraphrase:", "Sentence:", "New sentence:", "改写：", "句子："):
        if line.startswith(prefix):
            line = line[len(prefix):].strip()
    return line.strip('"“”')


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-lang", type=int, default=600)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lang", choices=("en", "zh", "both"), default="both",
                    help="zh: Chinese sources with a Chinese prompt (the English one gets them translated)")
    ap.add_argument("--out", type=Path, default=DEFAULT)
    a = ap.parse_args(argv)

    rnd = random.Random(a.seed)
    sources = (_en_positives(rnd, a.per_lang) if a.lang in ("en", "both") else []) + \
        (_zh_positives(rnd, a.per_lang) if a.lang in ("zh", "both") else [])
    done = set()
    if a.out.exists():
        for line in a.out.read_text(encoding="utf-8").splitlines():
            try:
                done.add(json.loads(line)["source"])
            except (json.JSONDecodeError, KeyError):
                continue
    lm = Clinic(Settings.load(None, llm=a.llm)).lm
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with a.out.open("a", encoding="utf-8") as f:
        for i, (text, family) in enumerate(sources):
            if text in done:
                continue
            prompt = (PROMPT_ZH if family.startswith("zh") and a.lang == "zh" else PROMPT).format(s=text)
            out = _clean(lm.chat([Message("user", prompt)], max_tokens=96, temperature=0.8).text)
            if 8 <= len(out) <= 300 and out != text:
                f.write(json.dumps({"text": out, "family": family, "source": text}, ensure_ascii=False) + "\n")
                f.flush()
            done.add(text)
            if i % 20 == 0:
                print(f"{i}/{len(sources)}: {out[:90]}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
