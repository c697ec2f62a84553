"""The registry of judge providers is the one list of them: the command line's choices, the
API's check and the docs' table read it, and no module outside ``_judge/providers/`` asks
which provider it is talking to."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

import evalstream
from evalstream._judge.providers import DEFAULT, NAMES, REGISTRY, get
from evalstream._judge.providers.base import Provider
from evalstream._judge.request import JudgeConfig
from tests.helpers import ROOT, loaded_after

PACKAGE = ROOT / "evalstream"
# Where a provider has no public endpoint, the base URL its documented examples use.
BASE_URLS = {"azure": "https://example-resource.openai.azure.com"}
PROVIDERS = PACKAGE / "_judge" / "providers"


def _names_in(node: ast.AST, names: set[str]) -> list[str]:
    """The provider names a value spells: a string, or the strings of a tuple, list or set."""
    if isinstance(node, ast.Constant) and node.value in names:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [found for item in node.elts for found in _names_in(item, names)]
    return []


def branches(package: Path, names: set[str]) -> list[str]:
    """Where a module outside ``_judge/providers/`` tells providers apart by name: a comparison
    with a name (``provider == "anthropic"``, ``in ("openai", ...)``), a table keyed by names
    (``{"openai": ...}``, ``X["anthropic"]``, a ``case``), or a list of two or more names (a
    copy of the registry's). A name as a default value or in a sentence is none of these."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.is_relative_to(package / "_judge" / "providers"):
            continue
        text = path.read_text()
        if not any(f'"{name}"' in text or f"'{name}'" in text for name in names):
            continue  # spells no name as a string: nothing to parse (most modules)
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Compare):
                spelled = [n for part in (node.left, *node.comparators)
                           for n in _names_in(part, names)]
            elif isinstance(node, ast.Dict):
                spelled = [n for key in node.keys if key is not None
                           for n in _names_in(key, names)]
            elif isinstance(node, ast.Subscript):
                spelled = _names_in(node.slice, names)
            elif isinstance(node, ast.MatchValue):
                spelled = _names_in(node.value, names)
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Call)):
                items = node.args if isinstance(node, ast.Call) else node.elts
                spelled = [n for item in items for n in _names_in(item, names)]
                spelled = spelled if len(spelled) > 1 else []
            else:
                continue
            if spelled:
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: "
                             f"{', '.join(map(repr, spelled))}")
    return found


def test_no_module_outside_the_providers_branches_on_a_provider_name() -> None:
    found = branches(PACKAGE, set(REGISTRY))
    assert found == [], ("give the provider's module what differs (evalstream/_judge/providers/"
                         "base.py) instead of asking which provider it is:\n" + "\n".join(found))


def test_the_branch_finder_sees_every_form_of_branch(tmp_path: Path) -> None:
    package = tmp_path / "evalstream"
    (package / "_judge" / "providers").mkdir(parents=True)
    (package / "_judge" / "providers" / "x.py").write_text('if p == "anthropic": pass\n')
    (package / "m.py").write_text(
        'A = p == "anthropic"\nB = p in ("openai", "local")\nC = {"openai": 1}\nD = T["openai"]\n'
        'E = choice("openai", "anthropic")\nF = ["openai", "anthropic"]\n'
        'match p:\n    case "anthropic":\n        pass\n'
        'def f(provider: str = "openai") -> str:\n    """Say "openai"."""\n'
        '    return f"at {provider}: not anthropic"\n')
    found = branches(package, {"openai", "anthropic"})
    assert sorted(int(line.split(":")[1]) for line in found) == [1, 2, 3, 4, 5, 6, 8]


def test_every_provider_is_a_whole_provider() -> None:
    assert NAMES and DEFAULT in REGISTRY
    for name, provider in REGISTRY.items():
        assert isinstance(provider, Provider) and provider.name == name
        assert not getattr(type(provider), "__abstractmethods__", None)
        assert set(provider.credential_headers) <= set(provider.headers("k"))
        assert provider.headers(None).keys().isdisjoint(provider.credential_headers)
        config = JudgeConfig(model="m", provider=name, base_url=BASE_URLS.get(name, ""))
        assert config.api is provider
        assert config.base_url == (provider.base_url or BASE_URLS[name])
        assert config.url.startswith(config.base_url)
        if not provider.base_url:  # no public endpoint: --base-url is required, and said
            with pytest.raises(evalstream.UsageError, match=f"--provider {name} needs "
                                                            "--base-url: the resource"):
                JudgeConfig(model="m", provider=name)


def _table() -> dict[str, str]:
    """docs/judge.md's provider table: each row by its provider's name."""
    text = (ROOT / "docs" / "judge.md").read_text()
    section = text.split("\n## Providers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {re.match(r"\| `([^`]+)`", row).group(1): row for row in rows}  # type: ignore[union-attr]


def test_the_docs_table_holds_every_provider_of_the_registry() -> None:
    table = _table()
    assert sorted(table) == sorted(REGISTRY), "docs/judge.md#providers and the registry differ"
    for name, provider in REGISTRY.items():
        row = table[name]
        for fact in (f"`{provider.base_url}`" if provider.base_url else "required",
                     f"`{provider.key_env}`",
                     f"`{provider.request_id_header}`", f"{provider.batch_limits.requests:,}",
                     f"{provider.batch_limits.bytes:,}"):
            assert fact in row, f"docs/judge.md's row of {name} does not say {fact}"


def test_the_command_line_offers_the_registry() -> None:
    from evalstream._cli import parser

    def sub(p: argparse.ArgumentParser, *path: str) -> argparse.ArgumentParser:
        for name in path:
            p = next(a for a in p._actions
                     if isinstance(a, argparse._SubParsersAction)).choices[name]
        return p

    for command, said, function in ((("judge",), "speaks", evalstream.judge),
                                     (("batch", "prepare"), "batch_speaks",
                                      evalstream.batch_prepare)):
        provider = next(a for a in sub(parser(), *command)._actions
                        if "--provider" in a.option_strings)
        # Not given, the API's default applies: the registry's, as the help says.
        assert tuple(provider.choices or ()) == NAMES and provider.default == argparse.SUPPRESS
        assert function.__kwdefaults__["provider"] == DEFAULT
        assert f"(default {DEFAULT})" in (provider.help or "")
        for p in REGISTRY.values():
            assert getattr(p, said) in (provider.help or "")


def test_the_api_takes_the_registry_names_and_refuses_others(tmp_path: Path) -> None:
    for name in NAMES:  # checked, then refused for the missing input: not for the name
        with pytest.raises(evalstream.InputError):
            evalstream.judge_verdicts(tmp_path / "none.jsonl", tmp_path / "v.jsonl", "m",
                                      provider=name, base_url=BASE_URLS.get(name, ""),
                                      environ={get(name).key_env: "k"})
    with pytest.raises(evalstream.UsageError, match=r"--provider: 'vertex' is not one of "
                                                    + ", ".join(NAMES)):
        evalstream.batch_prepare(tmp_path / "none.jsonl", tmp_path / "b", "m",
                                 provider="vertex")


def test_the_registry_is_light_to_import() -> None:
    # The command line reads it to build --provider's choices: every command, --help included,
    # imports it. The verdict records (60 ms), asyncio (40 ms) and aiohttp wait for a run.
    heavy = ("evalstream._verdicts.records", "asyncio", "aiohttp", "evalstream._judge.request")
    assert loaded_after("import evalstream._judge.providers", heavy) == []


@pytest.mark.parametrize("name", NAMES)
def test_a_provider_reads_its_own_errors(name: str) -> None:
    body = b'{"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}'
    assert get(name).error_detail(400, body) == "HTTP 400: no"


# What --show-request says carries the key, as docs/judge.md writes it.
SHOWN_CREDENTIAL = {"openai": "authorization: Bearer $OPENAI_API_KEY",
                    "anthropic": "x-api-key: $ANTHROPIC_API_KEY",
                    "azure": "api-key: $AZURE_OPENAI_API_KEY",
                    "gemini": "x-goog-api-key: $GEMINI_API_KEY",
                    "bedrock": "authorization: Bearer $AWS_BEARER_TOKEN_BEDROCK"}


@pytest.mark.parametrize("name", NAMES)
def test_show_request_names_the_key_header_and_variable_never_the_key(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes],
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from evalstream._cli import main
    from tests.judge.support import states

    monkeypatch.setenv(get(name).key_env, "sk-not-to-be-shown")
    src = states(tmp_path, ["a"])
    base = ["--base-url", BASE_URLS[name]] if name in BASE_URLS else []
    code = main(["judge", str(src), str(tmp_path / "v.jsonl"), "--model", "m", "--provider",
                 name, *base, "--show-request", "c000", "helpful"])
    out, err = capsysbinary.readouterr()
    config = JudgeConfig(model="m", provider=name, base_url=BASE_URLS.get(name, ""))
    said = SHOWN_CREDENTIAL[name]
    assert code == 0 and out.startswith(b"{") and b"sk-not-to-be-shown" not in out + err
    assert err.decode().startswith(f"POST {config.url}  ({said}); store key ")
