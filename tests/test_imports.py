"""The import rules of docs/architecture.md ("Import rules"), checked on the source: no import cycle
among robusteval's modules, and imports go one way between the layers.

The graph is read with ``ast``, so nothing is imported: every ``import``/``from ... import`` counts,
at module level or inside a function (a function-level import is still a dependency, only a later
one); imports under ``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "robusteval"

# The layers, lowest first (docs/architecture.md, "Import rules"): a module may import its own layer
# and those below it, never one above. A layer is the first name under robusteval (a package or a module).
ORDER: tuple[tuple[str, ...], ...] = (
    # the floor: values, errors, file I/O, option labels
    ("types", "estimate", "errors", "files", "ledger", "redact", "ranges", "labels"),
    ("models",),  # backends, one per file behind one protocol
    ("engine",),  # the engine every model call goes through
    ("results", "suite_specs"),  # typed result records and their JSON; the suites' registry (parts by dotted path)
    ("data",),  # loaders
    ("probes", "readers"),  # perturbations; reply text -> answer (a reader knows the label styles)
    ("judges", "rag"),
    ("metrics",),
    ("config",),  # RunConfig: reads data's and results' names
    ("report",),
    ("suites", "scoring", "check_determinism"),
    ("run", "configure", "merge", "compare", "catalog", "pilot"),  # the commands' bodies
    ("cli", "web", "api", "testing", "robusteval", "__main__"),  # the doors in; `robusteval` is the package's __init__
)
RANK = {name: rank for rank, names in enumerate(ORDER) for name in names}
# Beyond the order: the server reads results and rendered reports, never a suite or a run.
FORBIDDEN = {"web": {"suites", "scoring", "check_determinism", "run", "configure", "merge", "cli", "api"},
             # a reader imports no probe (the labels both use are on the floor), and a run takes its
             # engine from `engine`, not from a command one arrow up
             "readers": {"probes"}, "run": {"check_determinism"}}

# Imports against the order that are known and not yet moved: (importing module, layer it imports).
# The list only shrinks: a new violation fails, and so does an entry that no longer happens.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def module_names() -> dict[str, Path]:
    """Every module under src/robusteval by dotted name (a package by its ``__init__``)."""
    names = {}
    for path in (SRC / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that can run: all of them but those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(base: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module a ``from`` import names (relative imports resolved against ``base``)."""
    if not node.level:
        return node.module or ""
    parts = base.split(".") if is_package else base.split(".")[:-1]
    parts = parts[:len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def import_graph() -> dict[str, set[str]]:
    """module -> the robusteval modules it imports at run time. ``from a.b import c`` is an edge to
    ``a.b.c`` where that is a module, else to ``a.b``; an import of ``a.b.c`` is also an edge to the
    package ``a.b`` (its ``__init__`` runs first), except from inside that package."""
    modules = module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _runtime_imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _resolve(name, node, path.name == "__init__.py")
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
            for target in targets:
                while target and target not in modules:  # `import robusteval.x.y` of a name inside a module
                    target = target.rpartition(".")[0]
                if target.startswith(PACKAGE + ".") and target != name:
                    graph[name].add(target)
                    # importing a.b.c runs a.b's __init__ first (unless it is one of this module's own packages)
                    parents = [".".join(target.split(".")[:k]) for k in range(2, target.count(".") + 1)]
                    graph[name].update(p for p in parents if p in modules and not (name + ".").startswith(p + "."))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (depth-first search, deterministic order)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def layer(module: str) -> str:
    """``robusteval.engine.store`` -> ``engine``; ``robusteval.cli`` -> ``cli``."""
    return module.split(".")[1] if module.count(".") else module


def layer_violations(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(module, layer) -> the modules of that layer it imports, where the order or FORBIDDEN says it must not."""
    found: dict[tuple[str, str], list[str]] = {}
    for a, targets in graph.items():
        for b in sorted(targets):
            if RANK[layer(b)] > RANK[layer(a)] or layer(b) in FORBIDDEN.get(layer(a), ()):
                found.setdefault((a, layer(b)), []).append(b)
    return found


def test_the_graph_sees_module_and_function_level_imports_but_not_type_checking_ones():
    tree = ast.parse("from typing import TYPE_CHECKING\nimport robusteval.engine\n"
                     "if TYPE_CHECKING:\n    from robusteval.run import x\nelse:\n    import robusteval.data\n"
                     "def f():\n    from robusteval.suites import base\n")
    names = [n.module if isinstance(n, ast.ImportFrom) else n.names[0].name for n in _runtime_imports(tree)]
    assert names == ["typing", "robusteval.engine", "robusteval.data", "robusteval.suites"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_covers_the_package():
    graph = import_graph()
    assert "robusteval.run" in graph and "robusteval.suites.mcq" in graph
    assert "robusteval.suites" in graph["robusteval.run"] or any(
        m.startswith("robusteval.suites") for m in graph["robusteval.run"])


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_layer_has_a_place_in_the_order():
    layers = {layer(m) for m in module_names()}
    assert layers <= set(RANK), f"not in ORDER (tests/test_imports.py): {sorted(layers - set(RANK))}"
    assert len(RANK) == sum(len(names) for names in ORDER)  # a layer in two places


def test_a_violation_is_found_whether_the_import_is_up_the_order_or_forbidden():
    graph = {"robusteval.engine.runner": {"robusteval.metrics.stats", "robusteval.types"},
             "robusteval.web.server": {"robusteval.suites.base", "robusteval.report"},
             "robusteval.metrics.stats": {"robusteval.estimate"}}
    assert layer_violations(graph) == {("robusteval.engine.runner", "metrics"): ["robusteval.metrics.stats"],
                                       ("robusteval.web.server", "suites"): ["robusteval.suites.base"]}


def test_imports_go_one_way_between_layers():
    violations = layer_violations(import_graph())
    new = {k: v for k, v in violations.items() if k not in EXCEPTIONS}
    assert not new, "imports against the layer order (docs/architecture.md, \"Import rules\"):\n" + "\n".join(
        f"{a} imports {', '.join(targets)} ({layer(a)} may not import {b})" for (a, b), targets in sorted(new.items()))
    stale = sorted(set(EXCEPTIONS) - set(violations))
    assert not stale, f"no longer happen: delete them from EXCEPTIONS in tests/test_imports.py: {stale}"
