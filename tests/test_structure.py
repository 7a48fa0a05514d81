"""The shape of the code (issue 34), read from src/ragclinic with ast and grimp: the import contracts hold, no cycle
between top-level packages, no module over 400 lines, imports inside functions only where they pay (each with its
reason), the runtime never imports the training code, and only the trace package builds span dicts."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import deque
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ragclinic"
MAX_LINES = 400
TRACE = SRC / "trace"
ON_USE = "# on use:"
TRAINING = ("ragclinic_training", "ragclinic.verify.training")


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@cache
def parsed(path: Path) -> tuple[ast.Module, list[str]]:
    text = path.read_text(encoding="utf-8")
    return ast.parse(text, filename=str(path)), text.splitlines()


def imported_names(node: ast.Import | ast.ImportFrom, path: Path) -> list[str]:
    """The absolute module names an import statement reads (relative imports resolved against ``path``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = list(path.relative_to(SRC.parent).with_suffix("").parts)[: -node.level]
        base = ".".join(package + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def imports_in_functions(tree: ast.AST):
    """Every import statement whose nearest enclosing scope is a function (at any depth)."""
    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                yield child
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))
    yield from walk(tree, False)


@pytest.mark.slow
def test_import_contracts_hold():
    """`lint-imports` (the contracts in pyproject.toml [tool.importlinter]) passes, as `make test` runs it."""
    tool = Path(sys.executable).parent / "lint-imports"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: install the dev extra (`make install` or pip install -e '.[dev]')")
    done = subprocess.run([str(tool), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    broken = done.stdout[done.stdout.find("Broken contracts"):] if "Broken contracts" in done.stdout else done.stdout
    assert done.returncode == 0, f"lint-imports failed (rc {done.returncode}):\n{broken[-6000:]}\n{done.stderr[-2000:]}"


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Edges between the top-level parts of ragclinic (a subpackage or a top-level module is one node), from every
    import (inside functions too), and one example import (file:line) per edge."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("ragclinic", cache_dir=None)
    edges: dict[str, set[str]] = {}
    example: dict[tuple[str, str], str] = {}
    top = lambda m: ".".join(m.split(".")[:2])  # noqa: E731
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = top(importer), top(imported)
            if a == b:  # "ragclinic" itself (its __init__, which re-exports the Clinic) is a node too
                continue
            edges.setdefault(a, set()).add(b)
            if (a, b) not in example:
                d = graph.get_import_details(importer=importer, imported=imported)
                example[(a, b)] = f"{importer}:{d[0]['line_number']} imports {imported}" if d else importer
    return edges, example


def shortest_cycle(edges: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """The shortest cycle in the graph (empty when it has none) and every node on some cycle, found by a
    breadth-first search from each node."""
    best: list[str] = []
    looped: list[str] = []
    for start in sorted(edges):
        back = {start: None}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    path = [node]
                    while back[path[-1]] is not None:
                        path.append(back[path[-1]])
                    cycle = path[::-1] + [start]
                    looped.append(start)
                    if not best or len(cycle) < len(best):
                        best = cycle
                    queue.clear()
                    break
                if nxt not in back:
                    back[nxt] = node
                    queue.append(nxt)
    return best, looped


def test_no_cycle_between_top_level_packages():
    edges, example = package_graph()
    cycle, looped = shortest_cycle(edges)
    hops = "\n".join(f"  {a} → {b}: {example[(a, b)]}" for a, b in zip(cycle, cycle[1:]))
    assert not cycle, f"import cycle between top-level packages: {' → '.join(cycle)}\n{hops}\n" \
                      f"{len(looped)} packages are on some cycle: {', '.join(looped)}\n" \
                      "fix the dependency (move the shared piece down a layer); never hide it in a function"


def test_no_cycle_between_modules():
    """Within the packages too: no module imports, however indirectly, a module that imports it (imports in
    functions count; a package's __init__ is a module like the others)."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("ragclinic", cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    cycle, looped = shortest_cycle(edges)
    assert not cycle, f"import cycle between modules: {' → '.join(cycle)} ({len(looped)} modules on some cycle); " \
                      "move what both need into a module both can import"


PIPELINE_FACES = {"ragclinic.pipeline", *(f"ragclinic.pipeline.{m}" for m in (
    "runner", "request", "context", "cache", "retrieve", "scope", "gate", "generate", "reason"))}


def test_code_outside_the_pipeline_uses_only_its_public_faces():
    """Issue 54: outside pipeline/, code imports the runner, the request, the context, the answer cache and each
    layer's package (its ``__init__`` names what others may use), never a layer's inner modules."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("ragclinic", cache_dir=None)
    inner = sorted(f"{m} → {o}" for m in graph.modules if not m.startswith("ragclinic.pipeline")
                   for o in graph.find_modules_directly_imported_by(m)
                   if o.startswith("ragclinic.pipeline.") and o not in PIPELINE_FACES)
    assert not inner, "pipeline-internal modules imported from outside pipeline/ (export the name from the " \
                      "layer's __init__ and import it from there):\n" + "\n".join(inner)


def test_no_module_over_400_lines():
    sizes = {rel(p): len(parsed(p)[1]) for p in modules()}
    over = sorted(((n, f) for f, n in sizes.items() if n > MAX_LINES), reverse=True)
    assert not over, f"modules over {MAX_LINES} lines (split them by role):\n" + \
        "\n".join(f"  {f}: {n} lines" for n, f in over)


def test_imports_inside_functions_say_why():
    """An import inside a function is for an optional extra or a heavy module loaded on use (a parser's library,
    llama.cpp, the CLI's subcommands for a fast --help), and says so in a trailing `# on use: ...` comment."""
    offenders = []
    for path in modules():
        tree, lines = parsed(path)
        for node in imports_in_functions(tree):
            text = lines[node.lineno - 1: node.end_lineno]
            if not any(ON_USE in line for line in text):
                offenders.append(f"{rel(path)}:{node.lineno}: {text[0].strip()}")
    assert not offenders, (
        f"{len(offenders)} imports inside functions without a reason: import at the top of the module, or (an "
        f"optional extra, a heavy module loaded on use, a CLI subcommand) add a trailing `{ON_USE} <reason>` "
        "comment:\n  "
        + "\n  ".join(offenders))


def test_the_runtime_never_imports_the_training_code():
    offenders = []
    for path in modules():
        tree, _ = parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = imported_names(node, path)
                if any(n == t or n.startswith(t + ".") for n in names for t in TRAINING):
                    offenders.append(f"{rel(path)}:{node.lineno}")
    assert not offenders, "the runtime imports the offline training code (training/ragclinic_training, the " \
                          "`train` extra); move what both need into the runtime instead:\n  " + "\n  ".join(offenders)


def is_dict_expr(node: ast.AST) -> bool:
    return isinstance(node, (ast.Dict, ast.DictComp)) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict")


def trace_span_names(tree: ast.Module) -> set[str]:
    """The local names under which a module imports the trace's ``Span`` (text/injection.py has its own Span)."""
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and (n.module or "").startswith("ragclinic.trace") for a in n.names if a.name == "Span"}


def test_only_the_trace_package_builds_span_dicts():
    """Outside trace/, a Span is never given dict inputs/outputs to be encoded elsewhere: the codec builds them."""
    offenders = []
    for path in modules():
        if TRACE in path.parents:
            continue
        tree, _ = parsed(path)
        names = trace_span_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names):
                continue
            args = node.args[4:6] + [k.value for k in node.keywords if k.arg in ("inputs", "outputs")]
            if any(is_dict_expr(a) for a in args):
                offenders.append(f"{rel(path)}:{node.lineno}")
    assert not offenders, "Span built with dict inputs/outputs outside ragclinic/trace (pass the typed layer " \
                          "input/output; trace/codec.py writes the JSON):\n  " + "\n  ".join(offenders)


def spanish(node: ast.AST, names: set[str]) -> bool:
    """An expression that holds a trace span: ``x.span(...)``, ``x.spans[...]``, or a name bound to one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "span":
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "spans":
        return True
    return isinstance(node, ast.Name) and node.id in names


def span_names(tree: ast.Module) -> set[str]:
    """Names bound to spans anywhere in the module: assigned from an expression that reads ``.span(...)`` /
    ``.spans``, loop or comprehension targets over ``.spans``, and parameters named ``span`` or typed ``Span``."""
    reads = lambda e: any(isinstance(x, ast.Attribute) and x.attr in ("span", "spans") for x in ast.walk(e))  # noqa
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None \
                and reads(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and reads(node.iter):
            names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.arg) and (node.arg == "span" or (
                node.annotation is not None and "Span" in ast.unparse(node.annotation))):
            names.add(node.arg)
    return names


def test_no_span_dict_is_read_outside_the_trace_package():
    """Outside trace/, a span's raw ``.inputs`` / ``.outputs`` dicts are never read: the typed ``.input`` /
    ``.output`` (decoded once, by the codec) are."""
    offenders = []
    for path in modules():
        if TRACE in path.parents:
            continue
        tree, lines = parsed(path)
        names = span_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("inputs", "outputs") and spanish(node.value, names):
                offenders.append(f"{rel(path)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not offenders, "raw span dicts read outside ragclinic/trace (use span.input / span.output, typed):\n  " \
                          + "\n  ".join(offenders)
