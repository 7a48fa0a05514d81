"""docs/api.md's example runs as it stands (offline, extractive answers), in a fresh folder."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_the_documented_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "docs/api.md has one complete example"
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], str(DOC), "exec"), {"__name__": "__api_doc__"})
    out = capsys.readouterr().out
    assert "3 added" in out and "treasury bills" in out
    assert re.search(r"^retrieve \d+\.\d{3} s RetrieveOutput$", out, re.M)
    assert (tmp_path / "api-demo-kb" / "kb.sqlite3").exists()
