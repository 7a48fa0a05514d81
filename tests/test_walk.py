"""The walk of one question (issue 34): from the CLI's `ask` command to the first search, at most 5 functions.

The stack is read at the moment a retriever backend's ``retrieve`` method starts (the first search), and the
ragclinic functions between the CLI command and that method are counted: each is a hop a reader follows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app

MAX_HOPS = 5
SRC = str(Path(__import__("ragclinic").__file__).parent)


def walk_to_first_search(argv: list[str]) -> list[str]:
    """The ragclinic functions on the stack between the CLI command and the first retriever backend's search."""
    seen: list[list[str]] = []

    def profile(frame, event, arg):
        if seen or event != "call" or frame.f_code.co_name != "retrieve" or "self" not in frame.f_locals:
            return
        if "/pipeline/retrieve/" not in frame.f_code.co_filename.replace("\\", "/"):
            return
        stack, f = [], frame.f_back
        while f is not None:
            stack.append(f)
            f = f.f_back
        names = []
        for f in reversed(stack):  # outermost first
            path = f.f_code.co_filename
            if path.startswith(SRC) and not f.f_code.co_name.startswith("<"):  # a comprehension is no hop
                names.append(f"{Path(path).relative_to(SRC)}:{f.f_code.co_qualname}")
        seen.append(names)

    sys.setprofile(profile)
    try:
        result = CliRunner().invoke(app, argv)
    finally:
        sys.setprofile(None)
    assert result.exit_code == 0, result.output
    assert seen, "no retriever backend's retrieve() ran"
    names = seen[0]
    start = max(i for i, n in enumerate(names) if n.startswith("cli/") and n.endswith("ask_cmd"))
    return names[start + 1:]


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("walk")
    build_kb(tmp, BOND_DOCS).close()
    return str(tmp / "kb")


@pytest.mark.parametrize("doctor", ["--doctor", "--no-doctor"])
def test_ask_reaches_the_first_search_in_five_functions(kb_dir, doctor):
    hops = walk_to_first_search(["ask", "What is the risk-free rate?", "--kb", kb_dir, "--llm", "none", doctor,
                                 "--json"])
    assert len(hops) <= MAX_HOPS, f"{len(hops)} functions from `ask` to the first search:\n  " + "\n  ".join(hops)
