"""The package rule of ARCHITECTURE.md, read from the code's own imports: lower packages
never import higher ones, and nothing imports the command line."""

from __future__ import annotations

import ast
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
    "_engines": {"_files"},
    "_cases": {"_files"},
    "_checks": {"_files", "_cases"},
    "_build": {"_files", "_cases", "_checks", "_engines"},
    "_stats": {"_files", "_cases", "_checks", "_engines"},
    "_verdicts": {"_files", "_cases", "_checks"},
    "_judge": {"_files", "_cases", "_checks", "_verdicts"},
    "_convert": {"_files", "_cases", "_checks"},
    "_view": {"_files", "_cases", "_checks", "_verdicts", "_render"},
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


def _imports(path: Path) -> set[str]:
    """The evalstream packages a module imports (at any depth of the module)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError(f"{path}: relative import; use evalstream.{node.module}")
            if node.module == "evalstream":
                names = [f"evalstream.{a.name}" for a in node.names]
            else:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "evalstream" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.slow
def test_lower_packages_never_import_higher_ones() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
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
    for path in sorted(PACKAGE.rglob("*.py")):
        if _package_of(path) not in ("_cli", "__main__"):
            assert "_cli" not in _imports(path), f"{path.relative_to(ROOT)} imports evalstream._cli"


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
