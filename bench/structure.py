"""Structure figures for issue 34: import contracts, package cycles, module and function sizes, imports inside
functions, and the walk of `ask` to the first search. Prints one JSON object.

    .venv/bin/python bench/structure.py                      # this tree
    PYTHONPATH=/tmp/old/src .venv/bin/python bench/structure.py --src /tmp/old/src   # another checkout's code
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def cycles(src: Path, node=package_of) -> list[list[str]]:
    """Strongly connected components (more than one node) of the import graph, imports in functions too; a node is
    a top-level package (``node=package_of``) or a module (``node=str``)."""
    import grimp

    sys.path.insert(0, str(src))
    graph = grimp.build_graph("ragclinic", include_external_packages=False)
    edges: dict[str, set[str]] = defaultdict(set)
    for m in graph.modules:
        for other in graph.find_modules_directly_imported_by(m):
            if node(m) != node(other):
                edges[node(m)].add(node(other))
    nodes = sorted({node(m) for m in graph.modules})
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):  # Tarjan
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)
    return out


def code_figures(src: Path) -> dict:
    files = sorted((src / "ragclinic").rglob("*.py"))
    big_modules, big_functions, inner, reasoned = [], 0, 0, 0
    for p in files:
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        if len(lines) > 400:
            big_modules.append((str(p.relative_to(src)), len(lines)))
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > 50:
                    big_functions += 1
                for n in ast.walk(node):
                    if isinstance(n, (ast.Import, ast.ImportFrom)):
                        inner += 1
                        reasoned += "# on use:" in lines[n.end_lineno - 1]
    return {"modules": len(files), "lines": sum(len(p.read_text().splitlines()) for p in files),
            "modules_over_400_lines": big_modules, "functions_over_50_lines": big_functions,
            "imports_inside_functions": inner, "of_which_with_reason": reasoned}


def lint_imports(src: Path) -> dict:
    run = subprocess.run([str(ROOT / ".venv/bin/lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    tail = [ln for ln in run.stdout.splitlines() if ln.startswith("Contracts:")]
    return {"passed": run.returncode == 0, "summary": tail[-1] if tail else run.stdout[-300:]}


def walk_hops() -> list[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import BOND_DOCS, build_kb
    from test_walk import walk_to_first_search

    with tempfile.TemporaryDirectory() as tmp:
        build_kb(Path(tmp), BOND_DOCS).close()
        return walk_to_first_search(["ask", "What is the risk-free rate?", "--kb", f"{tmp}/kb", "--llm", "none",
                                     "--json"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    args = ap.parse_args()
    out = {"src": str(args.src), **code_figures(args.src), "package_cycles": cycles(args.src),
           "modules_on_a_cycle": sum(map(len, cycles(args.src, str))),
           "lint_imports": lint_imports(args.src)}
    hops = walk_hops()
    out["ask_walk"] = {"functions": len(hops), "path": hops}
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
