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
    graph = grimp.build_graph("ragclinic", include_external_packages=False,
                              exclude_type_checking_imports=True)  # as lint-imports reads them (pyproject.toml)
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


LAYER_NAMES = {"parse", "chunk", "retrieve", "scope", "gate", "generate"}


def _layer_names_in(node) -> set[str]:
    """The layer names a literal table holds: a dict's keys, a tuple/list/set's items, or the first argument of each
    call in a tuple/list (``LayerSpec("retrieve", …)``)."""
    items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    found = set()
    for x in items:
        if isinstance(x, ast.Call) and x.args:
            x = x.args[0]
        if isinstance(x, ast.Constant) and x.value in LAYER_NAMES:
            found.add(x.value)
    return found


def corridor_figures(src: Path) -> dict:
    """Issue 54: modules holding a table of the layers (a literal naming 3 or more of them), folder cycles inside
    pipeline/, pipeline-internal modules imported from outside it, and the arguments Clinic.answer hands the doctor
    and the pipeline."""
    import grimp

    tables = sorted(str(f.relative_to(src)) for f in (src / "ragclinic").rglob("*.py")
                    if any(len(_layer_names_in(n)) >= 3 for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                           if isinstance(n, (ast.Dict, ast.Tuple, ast.List, ast.Set))))

    def folder(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:3]) if len(parts) > 2 and parts[1] == "pipeline" else m

    inside = [c for c in cycles(src, folder) if all(x.startswith("ragclinic.pipeline.") for x in c)]
    sys.path.insert(0, str(src))
    graph = grimp.build_graph("ragclinic", include_external_packages=False, cache_dir=None)
    faces = {"ragclinic.pipeline", *(f"ragclinic.pipeline.{m}" for m in (
        "runner", "request", "context", "cache", "retrieve", "scope", "gate", "generate", "reason"))}
    inner = sorted({o for m in graph.modules if not m.startswith("ragclinic.pipeline")
                    for o in graph.find_modules_directly_imported_by(m)
                    if o.startswith("ragclinic.pipeline.") and o not in faces})
    return {"layer_tables": {"modules": len(tables), "where": tables},
            "pipeline_folder_cycles": inside, "pipeline_inner_modules_imported_from_outside": len(inner),
            "clinic_answer_to_ask": _ask_arguments(src / "ragclinic" / "clinic" / "clinic.py")}


def _ask_arguments(path: Path) -> list[int]:
    """How many arguments each ``….ask(…)`` call in ``Clinic.answer`` passes (a ``**run`` counted by the keywords of
    the ``run = dict(…)`` it spreads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "answer")
    spreads = {t.id: len(n.value.keywords) for n in ast.walk(fn) if isinstance(n, ast.Assign)
               and isinstance(n.value, ast.Call) and getattr(n.value.func, "id", "") == "dict"
               for t in n.targets if isinstance(t, ast.Name)}
    out = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "ask":
            out.append(len(n.args) + sum(1 if k.arg else spreads.get(getattr(k.value, "id", ""), 1)
                                         for k in n.keywords))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    args = ap.parse_args()
    out = {"src": str(args.src), **code_figures(args.src), "package_cycles": cycles(args.src),
           "modules_on_a_cycle": sum(map(len, cycles(args.src, str))),
           "lint_imports": lint_imports(args.src), **corridor_figures(args.src)}
    hops = walk_hops()
    out["ask_walk"] = {"functions": len(hops), "path": hops}
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
