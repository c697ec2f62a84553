"""Every option of every command refuses a bad value with a usage error (exit 2) that names
the option, before anything is read: found by walking the parser, so a new command or
option is checked as soon as it exists."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from evalstream._cli import common, main, parser
from evalstream._cli.common import temperature as _temperature

BAD = {
    common.size: ["", "-1", "0", "infk", "nanMiB", "1e999", "9" * 30, "1.5", "١٢", "0x10",
                  "1_000", "5 EiB", "9999999999GiB"],
    common.count: ["", "-1", "inf", "nan", "1e3", "9" * 30, "1_000", "١٢", "0x10", "1.0"],
    common.positive: ["", "0", "-1", "inf", "9" * 30, "1_000", "١٢", "2.5"],
    common.fraction: ["", "0", "1", "nan", "inf", "-0.5", "1.5", "x"],
    common.share: ["", "-0.1", "1.5", "nan", "inf", "x"],
    common.amount: ["", "0", "-1", "nan", "inf", "1e999", "x"],
    _temperature: ["", "x", "nan", "inf", "-1"],
    common.path: [""],
    common.text: [""],
}
# Valid arguments for each command, which the bad option value is added to.
TEMPLATE = {
    "build": ["in.jsonl", "out.jsonl"],
    "validate": ["in.jsonl"],
    "stats": ["in.jsonl"],
    "agree": ["v.jsonl", "c.jsonl"],
    "compare": ["a.jsonl", "b.jsonl"],
    "convert": ["in.csv", "out.jsonl"],
    "judge": ["states.jsonl", "verdicts.jsonl", "--model", "m"],
    "rubrics": ["r.toml"],
    "view": ["verdicts.jsonl", "--cases", "cases.jsonl"],
    "batch prepare": ["states.jsonl", "batch", "--model", "m"],
    "batch submit": ["batch"],
    "batch status": ["batch"],
    "batch collect": ["batch", "verdicts.jsonl"],
}


# Options whose values the library checks, with a usage error tested beside the command.
# tests/judge/test_cli.py, tests/judge/batch/test_prepare.py: http:// or https://
LIBRARY_CHECKED = {("judge", "--base-url"), ("batch prepare", "--base-url")}


def _commands(top: argparse.ArgumentParser | None = None,
              prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command that runs, by its words (``batch prepare``): groups are walked."""
    found = {}
    sub = next(a for a in (top or parser())._actions
               if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        if any(isinstance(a, argparse._SubParsersAction) for a in command._actions):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def _cases() -> list[tuple[str, Any, str, str]]:
    """(command, action, the option or positional, a bad value) for every typed argument."""
    out = []
    for name, command in _commands().items():
        for action in command._actions:
            if action.type in BAD:
                label = action.option_strings[0] if action.option_strings else action.dest
                out += [(name, action, label, bad) for bad in BAD[action.type]]
    return out


def test_every_option_that_takes_a_value_is_validated() -> None:
    missing = []
    for name, command in _commands().items():
        assert name in TEMPLATE, f"add a template for the new command {name}"
        for action in command._actions:
            takes_value = action.nargs != 0 and not isinstance(
                action, (argparse._HelpAction, argparse._VersionAction))
            label = (name, action.option_strings[0] if action.option_strings else action.dest)
            if takes_value and action.choices is None and action.type not in BAD \
                    and label not in LIBRARY_CHECKED:
                missing.append(f"{name} {action.option_strings or action.dest}")
    assert missing == [], "options without a validating type (cli.common)"


@pytest.mark.slow
@pytest.mark.parametrize(("command", "action", "label", "bad"), _cases(),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_a_bad_value_is_a_usage_error(command: str, action: Any, label: str, bad: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    args = list(TEMPLATE[command])
    if action.option_strings:
        args += [f"{label}={bad}"]
    else:
        position = [a.dest for a in _commands()[command]._actions
                    if not a.option_strings].index(action.dest)
        if position < len(args):
            args[position] = bad
        else:  # an optional positional (batch collect's result files)
            args.append(bad)
    with pytest.raises(SystemExit) as exited:
        main([*command.split(), *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    shown = label if action.option_strings else (action.metavar or action.dest)
    assert f"error: argument {shown}" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("kind", "text", "value"), [
    (common.size, "268435456", 268435456), (common.size, "256MiB", 256 << 20),
    (common.size, "1.5KiB", 1536), (common.size, "1gb", 1 << 30), (common.size, " 64KiB ", 65536),
    (common.count, "0", 0), (common.count, str(common.MAX_COUNT), common.MAX_COUNT),
    (common.positive, "8", 8), (common.fraction, "0.95", 0.95), (common.path, "-", "-"),
    (common.text, "scenario,split", "scenario,split"), (common.text, " ", " "),
])
def test_good_values_are_read(kind: Any, text: str, value: Any) -> None:
    assert kind(text) == value
