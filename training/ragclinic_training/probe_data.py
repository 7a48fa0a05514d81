"""Hidden states of the generator on answerable and unanswerable prompts, built the way generation builds them.

For each question of the licensed QA data (CMRC2018 trial, HaluEval QA; never RGB, SciFact or FaithBench) two
prompts, each with two numbered sources, through ``build_messages`` exactly as the generate layer calls it
(the short-answer schema, field decoding):

- answerable: the passage that holds the answer, beside a same-topic one that does not;
- unanswerable: the same-topic one beside a hard negative made from the answering passage — its answer sentence
  removed, or the question's year / number / ordinal changed in it (training/ragclinic_training/pairs.py) — so
  both prompts share topic, words and length, and differ in whether the answer is there.

The model is asked for one token of the status field with ``hidden_layers``: the vectors are the residual stream
at the token that closes ``{"status": "`` (models/hidden.py), and the sampled token is the model's own status
choice (the prompting baseline). Resumable: every example is appended to ``OUT.jsonl`` (its metadata) and its
vectors to ``OUT-<n>.npy`` shards (float16); a rerun skips what is there. ~2.1 s a prompt (~380 tokens) with the
1.5B model on 2 cores: ~41 min for the 1,176 prompts of ``--per-source 300``.

    python -m ragclinic_training.probe_data --cmrc .../cmrc2018_trial.json --halueval .../qa_one-turn_data.json \
        --out bench/out/probe/states --per-source 300
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections import defaultdict
from pathlib import Path

import numpy as np

from ragclinic_training.pairs import Pair, cmrc_pairs, halueval_pairs

HARD = ("removed", "swapped")
SAME_TOPIC = ("other_chunk", "other_paragraph", "other_article")


def questions(pairs: list[Pair], per_source: int, seed: int) -> list[dict]:
    """One record per question that has an answering passage, a same-topic other one and a hard negative."""
    by_q: dict[tuple[str, str, str], dict[str, list[Pair]]] = defaultdict(lambda: defaultdict(list))
    for p in pairs:
        if p.task == "relevance":
            by_q[(p.source, p.group, p.text)][p.kind].append(p)
    rng = random.Random(seed)
    out: dict[str, list[dict]] = defaultdict(list)
    for (source, group, q), kinds in sorted(by_q.items()):
        pos = kinds.get("positive")
        other = [p for k in SAME_TOPIC for p in kinds.get(k, [])]
        hard = [p for k in HARD for p in kinds.get(k, [])]
        if not pos or not other or not hard:
            continue
        h = rng.choice(hard)
        out[source].append({"source": source, "group": group, "question": q, "split": pos[0].split,
                            "answer": pos[0].answer, "positive": pos[0].passage, "other": rng.choice(other).passage,
                            "hard": h.passage, "hard_kind": h.kind,
                            # every same-topic and hard negative (no draw: the default style's draws stay the same)
                            "others": list(dict.fromkeys(p.passage for p in other)),
                            "hards": list(dict.fromkeys(p.passage for p in hard))})
    picked = []
    for source in sorted(out):
        rows = out[source]
        rng.shuffle(rows)
        picked += rows[:per_source]
    rng.shuffle(picked)
    return picked


def prompts(rec: dict, rng: random.Random) -> list[tuple[int, list[str]]]:
    """(label, passages in prompt order): 1 = the sources answer, 0 = they do not."""
    yes, no = [rec["positive"], rec["other"]], [rec["hard"], rec["other"]]
    rng.shuffle(yes)
    rng.shuffle(no)
    return [(1, yes), (0, no)]


def retrieved_prompts(rec: dict, rng: random.Random) -> list[tuple[int, list[str]]]:
    """The ``retrieved`` style, built the way RGB's cases are: the answering passage among up to three same-topic
    ones, against up to four same-topic or hard negatives, none of which holds the answer; [] when too few."""
    pool = list(dict.fromkeys(rec["others"] + rec["hards"]))
    if len(pool) < 3 or not rec["others"]:
        return []
    yes = rng.sample(rec["others"], min(3, len(rec["others"]))) + [rec["positive"]]
    no = rng.sample(pool, min(4, len(pool)))
    rng.shuffle(yes)
    return [(1, yes), (0, no)]


STYLES = {"pair": prompts, "retrieved": retrieved_prompts}


def planned(cmrc: Path, halueval: Path, per_source: int, seed: int,
            style: str = "pair") -> list[tuple[str, dict, int, list[str]]]:
    """Every prompt to evaluate, in order: (key, question record, label, passages) — deterministic, so the
    combiner's features (probe_train.py) are computed on the very passages each state was read from."""
    pairs = list(cmrc_pairs(cmrc)) + list(halueval_pairs(halueval))
    recs = questions(pairs, per_source, seed)
    rng = random.Random(seed)
    return [(f"{rec['source']}|{rec['question']}|{label}", rec, label, texts)
            for rec in recs for label, texts in STYLES[style](rec, rng)]


def messages_for(question: str, texts: list[str]):
    from ragclinic.pipeline.generate.base import GenerateInput
    from ragclinic.pipeline.generate.prompt import build_messages
    from ragclinic.types import Chunk, DocInfo, GateDecision, Hit, Passage

    lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in question) else "en"
    passages = []
    for n, text in enumerate(texts, start=1):
        c = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, lang, len(text) // 4, 0)
        passages.append(Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"d{n}.txt", "")))
    decision = GateDecision("answer", "factual", 0.5, "")
    return build_messages(GenerateInput(question, tuple(passages), decision), "short")


def load_model(name: str, cache_dir: Path):
    from ragclinic.config import Settings
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.weights import WEIGHTS

    s = Settings.load(Path(os.environ.get("TMPDIR", "/tmp")) / "probe-kb", llm=name, llm_isolation="inline",
                      llm_hidden_capture=True, cache_dir=cache_dir)
    return LlamaModel(WEIGHTS[name], s)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cmrc", type=Path, required=True)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="path prefix: OUT.jsonl and OUT-<n>.npy")
    ap.add_argument("--per-source", type=int, default=300)
    ap.add_argument("--model", default="local")
    ap.add_argument("--layers", default="4,6,8,10,12,14,16,18,20,22,24,26,27")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--style", choices=sorted(STYLES), default="pair",
                    help="pair: the answering passage beside a same-topic one vs a hard negative beside it (shipped); "
                         "retrieved: the answering passage among up to three same-topic ones vs up to four same-topic "
                         "or hard negatives (as RGB's cases; the counts can differ when a question has few)")
    ap.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("RAGCLINIC_CACHE_DIR",
                                                                          Path.home() / ".cache/ragclinic")))
    a = ap.parse_args(argv)
    from ragclinic.pipeline.generate.structured import SCHEMAS
    from tqdm import tqdm

    layers = tuple(int(x) for x in a.layers.split(","))
    todo = planned(a.cmrc, a.halueval, a.per_source, a.seed, a.style)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    meta_path = a.out.with_suffix(".jsonl")
    done = {json.loads(line)["key"] for line in meta_path.read_text().splitlines()} if meta_path.exists() else set()
    model = load_model(a.model, a.cache_dir)
    with meta_path.open("a", encoding="utf-8") as meta:
        for key, rec, label, texts in tqdm(todo, desc="hidden states", unit="prompt"):
            if key in done:
                continue
            msgs = messages_for(rec["question"], texts)
            out = model.chat(msgs, max_tokens=1, schema=SCHEMAS["short"], hidden_layers=layers)
            shard = a.out.parent / f"{a.out.name}-{len(done):05d}.npy"
            np.save(shard, np.stack([out.hidden[n] for n in layers]).astype(np.float16))
            row = {"key": key, "shard": shard.name, "layers": list(layers), "label": label, "style": a.style,
                   "model_status": out.text.split('"status": "', 1)[-1], "prompt_tokens": out.prompt_tokens,
                   "kind": "positive" if label else rec["hard_kind"], "model": model.model_id,
                   **{k: rec[k] for k in ("source", "group", "question", "split")}}
            meta.write(json.dumps(row, ensure_ascii=False) + "\n")
            meta.flush()
            done.add(key)


if __name__ == "__main__":
    main()
