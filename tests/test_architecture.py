"""The package rule of ARCHITECTURE.md, read from the code's own imports: lower packages
never import higher ones, nothing imports the command line, and no module imports itself
through others (imports inside functions count: each is a dependency all the same)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "evalstream"
# What each package may import (besides itself). ``errors`` and ``_version`` are the bottom of
# the rule: every package may import them.
BOTTOM = {"errors", "_version"}
BELOW = {
    "errors": set(),
    "_version": set(),
    "_options": set(),  # the values options take: for the API and the command line only
    "_files": set(),
    "_cases": {"_files"},
    "_checks": {"_files", "_cases"},
    "_engines": {"_files", "_cases", "_checks"},
    "_build": {"_files", "_cases", "_checks", "_engines"},
    "_stats": {"_files", "_cases", "_checks", "_engines"},
    "_verdicts": {"_files", "_cases", "_checks"},
    "_judge": {"_files", "_cases", "_checks", "_verdicts"},
    # convert writes verdicts from peers' logs (inspect, promptfoo) in the one verdict format
    "_convert": {"_files", "_cases", "_checks", "_verdicts"},
    "_view": {"_files", "_cases", "_checks", "_engines", "_verdicts", "_render"},
    "_render": {"_files", "_cases", "_checks", "_build", "_stats", "_verdicts", "_judge",
                "_convert"},
    # The public API's functions (re-exported by evalstream/__init__.py): everything but _cli.
    "_api": {"_options", "_files", "_cases", "_checks", "_engines", "_build", "_stats",
             "_verdicts", "_judge", "_convert", "_render", "_view"},
}
# What the command line may import: the API (the package and its functions), the rules of
# option values, what renders a result, and the registries it lists (choices, help,
# --list-formats, the built-in rubric file). Never a library module's options or runs.
CLI_IMPORTS = {"evalstream", "evalstream._options",
               "evalstream.errors", "evalstream._version", "evalstream._judge.providers",
               "evalstream._convert.formats", "evalstream._checks.rubrics"}
# The library's option objects and transactions: the API makes them, the command line never.
OPTION_OBJECTS = {"Options", "StatsOptions", "AgreeOptions", "CompareOptions", "JudgeConfig",
                  "Transaction", "Target"}


def _package_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem


def _module_of(path: Path) -> str:
    """``evalstream._build.run`` for evalstream/_build/run.py; a package by its __init__."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name. Parsed once for all the tests here."""
    return {_module_of(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@cache
def _imported_names(path: Path) -> tuple[str, ...]:
    """The dotted names a module imports, at any depth of the module (functions, ``if``
    blocks): ``from a.b import c`` gives ``a.b.c``, which is module ``a.b.c`` or a name in
    module ``a.b``."""
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError(f"{path}: relative import; use evalstream.{node.module}")
            names += [f"{node.module}.{a.name}" for a in node.names]
    return tuple(names)


def _imports(path: Path) -> set[str]:
    """The evalstream packages a module imports (at any depth of the module)."""
    found: set[str] = set()
    for name in _imported_names(path):
        parts = name.split(".")
        if parts[0] == "evalstream" and len(parts) > 1:
            found.add(parts[1])
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (``from a.b import c``: ``a.b.c`` when
    that is a module, else ``a.b``). Importing ``a.b`` also runs package ``a``, but a
    package's __init__ is not counted as imported by its own modules: every module of a
    package would otherwise be in a cycle with an __init__ that imports any of them."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for name in _imported_names(path):
            while name and name not in modules:
                name = name.rpartition(".")[0]  # a name defined in a module: that module
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (its modules, the first one repeated at the end), or None."""
    walking, done = 1, 2
    state: dict[str, int] = {}
    for root in sorted(graph):
        if root in state:
            continue
        # A depth-first walk: the path from the root, and what each module on it has left
        # to visit (sorted, so the cycle named is the same every time).
        path, left = [root], [sorted(graph[root], reverse=True)]
        state[root] = walking
        while path:
            if not left[-1]:
                state[path.pop()] = done
                left.pop()
                continue
            module = left[-1].pop()
            if state.get(module) == walking:
                return [*path[path.index(module):], module]
            if module not in state:
                state[module] = walking
                path.append(module)
                left.append(sorted(graph[module], reverse=True))
    return None


def test_lower_packages_never_import_higher_ones() -> None:
    modules = sorted(_modules().values())
    assert len(modules) > 30
    broken = []
    for path in modules:
        package = _package_of(path)
        if package in ("__init__", "__main__", "_cli"):
            continue  # the API and the command line sit on top of everything
        assert package in BELOW, f"{package} is not in the rule: add it to BELOW and ARCHITECTURE.md"
        for imported in _imports(path) - {package} - BELOW[package] - BOTTOM:
            broken.append(f"{path.relative_to(ROOT)} imports evalstream.{imported}")
    assert not broken, "\n".join(broken)


def test_nothing_imports_the_command_line() -> None:
    for path in _modules().values():
        if _package_of(path) not in ("_cli", "__main__"):
            assert "_cli" not in _imports(path), f"{path.relative_to(ROOT)} imports evalstream._cli"


def test_no_module_imports_itself_through_others() -> None:
    cycle = find_cycle(import_graph(_modules()))
    assert cycle is None, ("an import cycle (imports inside functions count): "
                           + " -> ".join(cycle or []))


@pytest.mark.parametrize("graph, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, None),  # two ways to one module: no cycle
    ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
    ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ({"x": set(), "a": {"x", "b"}, "b": {"x", "c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
])
def test_find_cycle(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_the_graph_reads_imports_inside_functions(tmp_path: Path) -> None:
    """The cycle build had until issue 24: ``run`` imported ``ranges`` inside a function,
    and ``ranges`` imported ``run`` at its top."""
    package = tmp_path / "evalstream" / "_build"
    package.mkdir(parents=True)
    (package / "run.py").write_text("def run():\n    from evalstream._build import ranges\n")
    (package / "ranges.py").write_text("from evalstream._build.run import Options\n")
    (package / "loop.py").write_text("import evalstream._cases.reading\n")
    modules = {"evalstream._build.run": package / "run.py",
               "evalstream._build.ranges": package / "ranges.py",
               "evalstream._build.loop": package / "loop.py"}
    graph = import_graph(modules)
    assert graph == {"evalstream._build.run": {"evalstream._build.ranges"},
                     "evalstream._build.ranges": {"evalstream._build.run"},
                     "evalstream._build.loop": set()}
    assert find_cycle(graph) == ["evalstream._build.ranges", "evalstream._build.run",
                                 "evalstream._build.ranges"]


def _cli_modules() -> list[Path]:
    return sorted((PACKAGE / "_cli").glob("*.py"))


def test_the_command_line_imports_only_the_api_and_what_renders() -> None:
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for module in modules:
                if module == "evalstream" or module.startswith("evalstream."):
                    assert module in CLI_IMPORTS or module.startswith(
                        ("evalstream._render", "evalstream._cli")), \
                        f"{path.relative_to(ROOT)} imports {module}: call the API instead"


def test_the_command_line_makes_no_option_object_of_the_library() -> None:
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else None
                assert name not in OPTION_OBJECTS, \
                    f"{path.relative_to(ROOT)}:{node.lineno} makes a {name}: the API does"


def test_every_package_is_in_the_architecture_document() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    for package in [*BELOW, "_cli"]:
        if (PACKAGE / package).is_dir():
            assert f"`{package}/`" in text, f"ARCHITECTURE.md does not describe {package}/"
