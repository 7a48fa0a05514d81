"""A read right after an upload sees it: the search clinic's lexical index is reloaded when the knowledge base's
version moves (tantivy's own reload runs on a delay, so `/v1/retrieval` right after an upload missed the new
document, and a replay of an answer given meanwhile retrieved something else and failed with 400)."""

from __future__ import annotations

from .conftest import ACME, ADMIN, auth


def test_a_search_right_after_each_upload_finds_it(served):
    for i in range(4):
        word = f"quillfeather{i}"
        up = served.post("/v1/ingest", headers=auth(ACME),
                         files={"files": (f"quill{i}.md", f"# Quills {i}\n\nThe acme {word} costs {i} dollars.\n".encode(),
                                          "text/markdown")})
        assert up.status_code == 200, up.text
        hits = served.post("/v1/retrieval", json={"query": word, "k": 3}, headers=auth(ACME)).json()["hits"]
        assert hits and word in hits[0]["text"], (i, [h["text"] for h in hits])


def test_an_answer_given_right_after_an_upload_replays(served):
    for i in range(4):
        up = served.post("/v1/ingest", headers=auth(ACME),
                         files={"files": (f"lamp{i}.md", f"# Lamps {i}\n\nThe acme lamp{i} budget is {i} dollars.\n".encode(),
                                          "text/markdown")})
        assert up.status_code == 200, up.text
        tid = served.post("/v1/ask", json={"question": f"What is the acme lamp{i} budget?", "doctor": False},
                          headers=auth(ACME)).json()["trace_id"]
        again = served.post(f"/v1/traces/{tid}/replay", headers=auth(ADMIN))
        assert again.status_code == 200 and again.json()["equal"] is True, (i, again.text)
