"""`eval rag --corpus FOLDER` (issue 35): a folder ingested once into the knowledge base every question is asked
against, the simple-RAG peer over it (the top 5 of the same hybrid retrieval), gold passages' ranks, --split."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.eval.corpus import default_corpus_kb, open_corpus
from ragclinic.eval.datasets import load
from ragclinic.eval.tasks.gold import gold_metrics, gold_rank, holds_gold
from ragclinic.eval.tasks.naive import INSTRUCTION, TOP
from ragclinic.eval.tasks.rag import arm_metrics, cases, run_rag
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.retrieve import create_retriever

TOPICS = {
    "valves.md": ("Valves", ["The zorblax valve opens at a pressure of 42 kPa on the intake side.",
                             "A stuck valve is cleaned with warm water and a soft brush, never with acid.",
                             "Valves of the older series carry a green mark on the housing."]),
    "backups.md": ("Backups", ["The nightly backup of the quuxian archive runs every Tuesday at two in the morning.",
                               "Backups are kept for ninety days and then removed by the rotation job.",
                               "A restore needs the archive key that the operator keeps offline."]),
    "pumps.md": ("Pumps", ["The main pump draws eleven litres a minute at full speed.",
                           "Pump seals are replaced every second year during the summer shutdown.",
                           "A humming pump with no flow usually has air trapped in the line."]),
}
QUESTIONS = [
    {"id": "q1", "question": "At what pressure does the zorblax valve open?", "answers": ["42 kPa"],
     "gold": ["zorblax valve opens at a  pressure of 42 KPA"], "page": "valves.md", "split": "dev"},
    {"id": "q2", "question": "How long are backups kept?", "answers": ["ninety days"],
     "gold": ["kept for ninety days"], "page": "backups.md", "split": "heldout"},
    {"id": "q3", "question": "How fast is the main pump?", "answers": ["eleven litres"],
     "gold": ["a snippet no page holds"], "page": "pumps.md", "split": "dev"},
    {"id": "q4", "question": "What colour is the backup tape?", "expect_refusal": True, "split": "heldout",
     "page": ""},
]


@pytest.fixture
def small_chunks(monkeypatch):
    """One section a chunk: nine chunks from three files, so that the peer's top 5 is a real cut."""
    monkeypatch.setenv("RAGCLINIC_EMBEDDER", "fake")
    monkeypatch.setenv("RAGCLINIC_CHUNK_MAX_TOKENS", "24")
    monkeypatch.setenv("RAGCLINIC_CHUNK_MIN_TOKENS", "4")
    monkeypatch.setenv("RAGCLINIC_OVERLAP_MIN_TOKENS", "0")
    monkeypatch.setenv("RAGCLINIC_OVERLAP_MAX_TOKENS", "0")


def write_folder(tmp_path):
    folder = tmp_path / "manual"
    folder.mkdir()
    for name, (title, sections) in TOPICS.items():
        body = "\n\n".join(f"## {title} {i}\n\n{s}" for i, s in enumerate(sections, start=1))
        (folder / name).write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    return folder


def write_questions(tmp_path, items=QUESTIONS):
    f = tmp_path / "questions.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    return f


def invoke(*args):
    return CliRunner().invoke(app, ["eval", "rag", *args])


def test_gold_snippets_match_without_whitespace_and_case():
    assert holds_gold("The zorblax valve opens\nat a pressure of 42 kPa.", ["VALVE opens at a pressure of 42kpa"])
    assert not holds_gold("The valve opens.", ["valve closes"]) and not holds_gold("text", [])
    assert gold_rank(["a", "b holds it", "c holds it"], ["HOLDS it"]) == 2 and gold_rank(["a"], ["z"]) is None


def test_gold_recall_only_where_every_arm_row_retrieved_that_deep():
    rows = [{"gold": ["x"], "expect_refusal": False, "naive": {"gold_rank": r, "gold_depth": 5, "gold_shown": r is not None}}
            for r in (1, 3, None, 6)]
    rows.append({"gold": [], "expect_refusal": True, "naive": {"refused": True}})
    m = gold_metrics(rows, "naive")
    assert m == {"gold_recall@1": 0.25, "gold_recall@5": 0.5, "gold_shown": 0.75}


def test_the_loader_keeps_gold_page_and_split(tmp_path):
    items = load(f"jsonl:{write_questions(tmp_path)}").data
    assert items[0].gold == ("zorblax valve opens at a  pressure of 42 KPA",)
    assert (items[0].page, items[0].split, items[0].id) == ("valves.md", "dev", "q1")
    assert items[3].expect_refusal and items[3].gold == () and items[3].page == ""  # "": no page


def test_folder_ingested_once_then_reused_without_a_new_version(tmp_path, small_chunks):
    folder, q = write_folder(tmp_path), write_questions(tmp_path)
    first = invoke("--dataset", f"jsonl:{q}", "--corpus", str(folder), "--llm", "fake", "--no-doctor", "--json")
    assert first.exit_code == 0, first.output
    a = json.loads(first.stdout)
    assert a["corpus"]["ingest"]["added"] == 3 and a["corpus"]["chunks"] >= 6
    again = invoke("--dataset", f"jsonl:{q}", "--corpus", str(folder), "--llm", "fake", "--no-doctor", "--json")
    b = json.loads(again.stdout)
    assert b["corpus"]["kb"] == a["corpus"]["kb"] and b["corpus"]["kb_version"] == a["corpus"]["kb_version"]
    assert b["corpus"]["ingest"]["added"] == b["corpus"]["ingest"]["updated"] == 0
    assert b["corpus"]["ingest"]["unchanged"] == 3
    assert a["n"] == 4 and "gold_recall@1" in b["metrics"]["baseline"]
    assert a["corpus"]["kb"] == str(default_corpus_kb(folder, Settings().cache_dir))
    (folder / "pumps.md").write_text("# Pumps\n\nThe main pump draws twelve litres a minute.\n", encoding="utf-8")
    assert a["corpus"]["kb"] != str(default_corpus_kb(folder, Settings().cache_dir))  # changed files: another KB


def test_gold_ranks_and_the_peer_sees_exactly_the_top_5_of_the_hybrid_retrieval(tmp_path, small_chunks):
    folder = write_folder(tmp_path)
    items = load(f"jsonl:{write_questions(tmp_path)}").data
    lm = ScriptedLanguageModel(["42 kPa [1]."], yes_prob=0.9)
    corpus = open_corpus(folder, tmp_path / "kb", "none", lm)
    try:
        kb = corpus.parts.kb
        assert kb.settings.retriever == "hybrid"
        rows = run_rag(cases(list(items), ["0"], 0), lm, {"llm": "none"}, doctor=True, shared_kb=kb,
                       arms=("naive", "baseline", "doctor"))
        hits = {it.id: create_retriever(kb).retrieve(it.question, kb.settings.top_k) for it in items}
    finally:
        corpus.parts.close()
    assert len(hits["q1"]) > TOP  # the cut is real
    by_id = {r["id"]: r for r in rows}
    for it in items:
        row, top = by_id[it.id], hits[it.id][:TOP]
        assert row["naive"]["chunks"] == [h.chunk.id for h in top]  # the peer's passages: the pipeline's top 5
        want = gold_rank([h.chunk.text for h in hits[it.id]], it.gold) if it.gold else None
        if it.gold:
            assert row["baseline"]["gold_rank"] == want == row["doctor"]["gold_rank"]
            assert row["naive"]["gold_rank"] == (want if want is not None and want <= TOP else None)
        assert (row.get("page", ""), row.get("split", ""), row["id"]) == (it.page, it.split, it.id)
    assert by_id["q1"]["baseline"]["gold_rank"] == 1 and by_id["q1"]["naive"]["gold_shown"]
    assert by_id["q1"]["baseline"]["gold_passage"] == 1 and by_id["q3"]["baseline"]["gold_rank"] is None
    assert "gold_rank" not in by_id["q4"]["baseline"]  # unanswerable: no gold
    # the prompt the peer's model call was given holds those five passages, in order, and nothing else
    peer = [msgs for kind, msgs in lm.calls if kind == "chat" and msgs[0].content in INSTRUCTION.values()]
    assert len(peer) == len(items)
    text = peer[0][1].content
    for i, h in enumerate(hits["q1"][:TOP], start=1):
        assert f"Document {i}: {h.chunk.text}" in text
    assert f"Document {TOP + 1}:" not in text
    m = arm_metrics(rows, "baseline")
    assert m["gold_recall@10"] == 0.6667  # q1 and q2 found, q3's snippet is on no page; q4 is unanswerable
    assert m["gold_recall@1"] == round(sum(by_id[q]["baseline"]["gold_rank"] == 1 for q in ("q1", "q2")) / 3, 4)
    assert "gold_recall@10" not in arm_metrics(rows, "naive") and "gold_recall@5" in arm_metrics(rows, "naive")


def test_corpus_with_items_that_bring_documents_is_a_usage_error(tmp_path, small_chunks):
    folder = write_folder(tmp_path)
    q = write_questions(tmp_path, [{"id": "d1", "question": "Who?", "answers": ["x"], "documents": ["x did."]}])
    r = invoke("--dataset", f"jsonl:{q}", "--corpus", str(folder), "--llm", "fake", "--no-doctor")
    assert r.exit_code == 2
    assert "--corpus" in r.output and "item d1" in r.output and "brings its own documents" in r.output
    r = CliRunner().invoke(app, ["eval", "doctor", "--dataset", f"jsonl:{q}", "--corpus", str(folder)])
    assert r.exit_code == 2 and "--corpus applies to the rag task" in r.output


def test_split_keeps_only_its_items(tmp_path, small_chunks):
    folder, q = write_folder(tmp_path), write_questions(tmp_path)
    r = invoke("--dataset", f"jsonl:{q}", "--corpus", str(folder), "--llm", "fake", "--arms", "naive,plain",
               "--split", "heldout", "--json", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["n"] == 2 and set(data["metrics"]) == {"naive", "baseline"}
    rows = [json.loads(x) for x in (tmp_path / "o" / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {x["id"] for x in rows} == {"q2", "q4"} and all(x["split"] == "heldout" for x in rows)
    assert rows[0]["naive"]["chunks"] and rows[0]["gold"] == ["kept for ninety days"]
    assert "Asked against the folder" in (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    bad = invoke("--dataset", f"jsonl:{q}", "--corpus", str(folder), "--llm", "fake", "--split", "test")
    assert bad.exit_code == 2 and "'dev', 'heldout'" in bad.output


def test_a_run_over_a_changed_folder_does_not_resume_the_old_one(tmp_path, small_chunks):
    """The checkpoint names the folder's content, not only its path: rows over the old files never mix in."""
    folder, q = write_folder(tmp_path), write_questions(tmp_path)
    args = ("--dataset", f"jsonl:{q}", "--corpus", str(folder), "--llm", "fake", "--arms", "plain", "--split",
            "heldout", "--out", str(tmp_path / "o"))
    assert invoke(*args).exit_code == 0
    first = next(p for p in folder.iterdir() if p.is_file())
    first.write_text(first.read_text(encoding="utf-8") + "\n\nA sentence added later.\n", encoding="utf-8")
    r = invoke(*args)
    assert r.exit_code == 2 and "corpus_digest" in r.output and "another run" in r.output
