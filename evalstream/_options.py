"""The values options take: one rule each, for the command line and the Python API alike.

The command line parses text (``parse_*``: ``cli.common`` makes them argparse types); the
API checks the typed values it is given (``check``, by the option's keyword). Both say
what is wrong in the same words, after the option as the command line spells it:
``argument --max-tokens: -5 must be positive`` on the command line, ``--max-tokens: -5 must
be positive`` from ``evalstream.build(..., max_tokens=-5)``. The API takes typed values,
as its signatures say: ``max_tokens="32000"`` is an error, not a number read from text.
Only ``evalstream.errors`` is imported here: ``--help`` stays cheap.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from evalstream.errors import UsageError

MAX_COUNT = 1 << 62  # far above anything useful, and within every integer type used
TOKENIZERS = ("o200k_base", "cl100k_base")  # evalstream._checks.encodings.ENCODINGS (tested)
REPORT_FORMATS = ("table", "json", "markdown")  # stats, agree, compare: --format
# The sections of stats' table (evalstream._render.stats.SECTIONS, tested): here so that
# --help, which lists them, imports no renderer.
SECTIONS = ("overview", "groups", "sizes", "labels", "coverage", "checks", "metadata")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")  # ASCII digits only: int() also takes "1_0", "١٢"
_WHOLE = re.compile(r"-?[0-9]+")


# -- ranges: the sentences both sides give ---------------------------------------------------------
def _whole(value: int, least: int) -> int:
    if value < least:
        raise UsageError(f"{value} must be {'positive' if least == 1 else f'{least} or more'}")
    if value > MAX_COUNT:
        raise UsageError(f"{value} is too large (at most {MAX_COUNT:,})")
    return value


def _size(value: int) -> int:
    if not 0 < value <= MAX_COUNT:
        raise UsageError(f"{value} must be a positive size up to 4 EiB")
    return value


def _fraction(value: float) -> float:
    if not 0 < value < 1:
        raise UsageError(f"{value} must be between 0 and 1 (e.g. 0.95)")
    return value


def _share(value: float) -> float:
    if not 0 <= value <= 1:
        raise UsageError(f"{value} must be between 0 and 1 (e.g. 0.02)")
    return value


def _amount(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{value} must be a number above 0")
    return value


def _temperature(value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{value} must be a number of 0 or more (or `none`)")
    return value


# -- the command line: text to values --------------------------------------------------------------
def parse_count(text: str) -> int:
    """A whole number, 0 or more."""
    return _whole(_parse_whole(text), 0)


def parse_positive(text: str) -> int:
    """A whole number, 1 or more."""
    return _whole(_parse_whole(text), 1)


def _parse_whole(text: str) -> int:
    t = text.strip()
    if not _WHOLE.fullmatch(t):
        raise UsageError(f"{text!r} is not a whole number")
    if len(t.lstrip("-")) > 20:
        raise UsageError(f"{text!r} is too large (at most {MAX_COUNT:,})")
    return int(t)


def parse_size(text: str) -> int:
    """A size in bytes: ``268435456``, ``64KiB``, ``256MiB``, ``1GiB`` (also KB, MB, GB)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = units.get(t[-1:], 1)
    number = t[:-1] if unit != 1 else t
    if not _NUMBER.fullmatch(number) or (unit == 1 and "." in number):
        raise UsageError(f"{text!r} is not a size (e.g. 268435456, 256MiB)")
    if len(number) > 30:
        raise UsageError(f"{text!r} must be a positive size up to 4 EiB")
    return _size(int(float(number) * unit) if "." in number else int(number) * unit)


def _parse_number(text: str, extra: str = "") -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a number{extra}") from None


def parse_fraction(text: str) -> float:
    """A number strictly between 0 and 1."""
    return _fraction(_parse_number(text))


def parse_share(text: str) -> float:
    """A number from 0 to 1, both included (a rate)."""
    return _share(_parse_number(text))


def parse_amount(text: str) -> float:
    """A finite number above 0 (seconds, prices, rates)."""
    return _amount(_parse_number(text))


def parse_temperature(text: str) -> float | None:
    """A sampling temperature of 0 or more, or ``none`` to send none (models that accept
    only their default)."""
    if text.lower() == "none":
        return None
    return _temperature(_parse_number(text, " (or `none`, to send no temperature)"))


def parse_path(text: str) -> str:
    """A file path (``-`` for stdin or stdout where the option says so): not empty."""
    if not text:
        raise UsageError("an empty path; give a file name (or - for stdin or stdout where "
                         "allowed)")
    if "\0" in text:
        raise UsageError(f"{text!r} holds a NUL character, which no path may")
    return text


def parse_text(text: str) -> str:
    """A value that must not be empty (metadata keys, a column, a rule, a separator)."""
    if not text:  # a space may be a value (a CSV separator): only nothing is refused here
        raise UsageError("an empty value; see --help for what it takes")
    return text


# -- the Python API: typed values ------------------------------------------------------------------
def _not(value: Any, wanted: str) -> UsageError:
    """``'32000' is text, not a whole number``: a value of the wrong type."""
    if value is None:
        return UsageError(f"None is not {wanted}")
    return UsageError(f"{value!r} is {_kind(value)}, not {wanted}")


def _kind(value: Any) -> str:
    """What a value is, as a sentence names it."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def _int(least: int) -> Callable[[str, Any], int]:
    def rule(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            fix = f"; give {name}={value.strip()}" if isinstance(value, str) and \
                value.strip().isdigit() and value.isascii() else ""
            raise UsageError(f"{_not(value, 'a whole number')}{fix}")
        return _whole(value, least)
    return rule


def _size_rule(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{_not(value, 'a size in bytes')} (an int: {name}=256 << 20 for "
                         "256 MiB)")
    return _size(value)


def _float(check: Callable[[float], float]) -> Callable[[str, Any], float]:
    def rule(name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _not(value, "a number")
        return check(float(value))
    return rule


def _path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise _not(value, "a path")
    return parse_path(os.fspath(value))


def _paths(name: str, value: Any) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        raise UsageError(f"{os.fspath(value)!r} is one path, not a list of paths; give "
                         f"{name}=[{os.fspath(value)!r}]")
    if not isinstance(value, (list, tuple)):
        raise _not(value, "a list of paths")
    return [_item(name, value, i, _path) for i in range(len(value))]


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _not(value, "text")
    return parse_text(value)


def _texts(name: str, value: Any) -> list[str]:
    if isinstance(value, str):
        raise UsageError(f"{value!r} is one text, not a list; give {name}=[{value!r}]")
    if not isinstance(value, (list, tuple)):
        raise _not(value, "a list of texts")
    return [_item(name, value, i, _text) for i in range(len(value))]


def _keys(name: str, value: Any) -> list[str]:
    """Metadata keys: ``"scenario,split"`` (split by the command, as its command line's text)
    or a list of keys."""
    if isinstance(value, str):
        return [value]
    return _texts(name, value)


def _prices(name: str, value: Any) -> dict[str, tuple[float, float]]:
    """Prices by model, USD per million input and output tokens: a mapping of a model to two
    numbers (``{"gpt-4.1-mini": (0.4, 1.6)}``), or the command line's texts, one a model
    (``["gpt-4.1-mini=0.4,1.6"]``)."""
    if isinstance(value, str):
        raise UsageError(f"{value!r} is one text, not a list; give {name}=[{value!r}]")
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        pairs = []
        for i, text in enumerate(value):
            if not isinstance(text, str) or "=" not in text:
                raise UsageError(f"item {i + 1}: {text!r} is not MODEL=IN,OUT (e.g. "
                                 "gpt-4.1-mini=0.4,1.6)")
            model, _, numbers = text.rpartition("=")
            pairs.append((model, numbers.split(",")))
    else:
        raise _not(value, "a mapping of models to (input, output) prices")
    out = {}
    for model, given in pairs:
        try:
            price_in, price_out = (float(x) for x in given)
        except (TypeError, ValueError):
            raise UsageError(f"{model}: give two prices, USD per million input and output "
                             f"tokens (e.g. {model}=0.4,1.6), not {given!r}") from None
        if not isinstance(model, str) or not model.strip():
            raise UsageError(f"{model!r} is not a model's name")
        out[model] = (_amount(price_in), _amount(price_out))
    return out


def _item(name: str, items: Any, i: int, rule: Callable[[str, Any], Any]) -> Any:
    try:
        return rule(name, items[i])
    except UsageError as exc:
        raise UsageError(f"item {i + 1}: {exc}") from None


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _not(value, "True or False")
    return value


def choice(*allowed: str) -> Callable[[str, Any], str]:
    """The rule of an option that takes one of ``allowed``."""
    def rule(name: str, value: Any) -> str:
        if value not in allowed or not isinstance(value, str):
            raise UsageError(f"{value!r} is not one of {', '.join(allowed)}")
        return value
    return rule


def choices(*allowed: str) -> Callable[[str, Any], list[str]]:
    """The rule of an option that takes a list of values, each one of ``allowed``."""
    one = choice(*allowed)

    def rule(name: str, value: Any) -> list[str]:
        if isinstance(value, str):
            raise UsageError(f"{value!r} is one text, not a list; give {name}=[{value!r}]")
        if not isinstance(value, (list, tuple)):
            raise _not(value, "a list of texts")
        return [_item(name, value, i, one) for i in range(len(value))]
    return rule


def _providers_text(name: str, value: Any) -> str:
    """Text where "" is the provider's own (its URL, deployment, api-version, region, answer
    format): the value is checked by the provider that reads it (``JudgeConfig``)."""
    if not isinstance(value, str):
        raise _not(value, "text")
    return value


def _environ(name: str, value: Any) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise _not(value, "a mapping of names to values")
    return value


Rule = Callable[[str, Any], Any]
# Every keyword option of the API (tests/test_api.py checks that each field of an Options
# the API fills has one): the command line's flag for it and its rule.
RULES: dict[str, tuple[str, Rule]] = {}


def _add(rule: Rule, *names: str, flag: str | None = None) -> None:
    for name in names:
        RULES[name] = (flag or f"--{name.replace('_', '-')}", rule)


_add(_int(1), "max_tokens", "workers", "max_connections", "max_attempts", "max_output_tokens",
     "limit", "max_requests_per_file", "thinking_budget", "samples", "resamples")
_add(_int(0), "max_ids", "max_requests", "port")
_add(_size_rule, "max_line_bytes", "max_bytes_per_file")
_add(_float(_fraction), "confidence")
_add(_float(_share), "max_unscored_rate")
_add(_float(_fraction), "target_width")  # agree --estimate: a width between 0 and 1
_add(_int(1), "to_label")
_add(_float(_amount), "timeout", "max_wait", "poll", "rpm", "tpm", "price_in", "price_out",
     "max_cost")
_add(_float(_temperature), "temperature")
_add(_path, "rejects", "report", "store", "states", "compare", "view", "only_missing", "html",
     "pair_with", "compare_cases", "jury", "to_label_output")
_add(_paths, "rubric_files", flag="--rubrics")
_add(_paths, "results", flag="RESULTS")
_add(_paths, "runs", flag="RUNS")  # agree_judges(runs, cases)
_add(_prices, "prices", flag="--price")
_add(_paths, "paths", flag="--rubrics")  # load_rubrics(paths)
_add(_texts, "maps", flag="--map")
_add(_texts, "sets", flag="--set")
_add(_texts, "values", "parse_json", "tool_failure_when")
_add(_keys, "by")
_add(_text, "scheduler", "api_key_env", "id_from", "split", "separator", "model", "host")
# A judge provider's settings: each provider says which it takes and checks their values
# (evalstream._judge.providers; JudgeConfig refuses one a provider does not take). Those
# whose default is "" (the provider's own) take "" from the API; --thinking-budget is above.
_add(_text, "reasoning_effort")
_add(_providers_text, "response_format", "deployment", "api_version", "region")
_add(_text, "format", flag="--from")
_add(_providers_text, "base_url")
_add(choice(*TOKENIZERS), "tokenizer")
_add(choice("local", "dask"), "engine")
# The registry of judge providers (evalstream._judge.providers) is not imported here: the API
# checks ``provider`` against it with ``check("provider", value, rule=choice(*NAMES))``.
_add(_text, "provider")
_add(choice("unscored", "skip"), "missing")
_add(_flag, "exact_tokens", "allow_unknown_fields", "force", "keep_unmapped",
     "include_incomparable", "retry_unscored", "resubmit_unconfirmed", "wait",
     "fail_on_stale", "keep_index", "estimate")
_add(_flag, "quoting", flag="--no-quoting")
_add(_flag, "download", flag="--no-download")
_add(_flag, "open_browser", flag="--no-browser")
_add(_environ, "environ", flag="environ")
for _name in ("input", "output", "folder", "verdicts", "cases", "run_a", "run_b"):
    _add(_path, _name, flag=_name.upper())  # the positional arguments
_add(choices(*SECTIONS), "sections", flag="--section")
ONE_KEY: Rule = _text  # `by` where a command groups by one metadata key (agree, view)
# Keywords whose flag or rule is another in some commands: (flag, rule) for ``check``.
REPORT_FORMAT = ("--format", choice(*REPORT_FORMATS))  # stats, agree, compare
VALIDATE_FORMAT = ("--format", choice("table", "json"))
OUTPUT_OPTION = ("--output", _path)  # -o of stats, agree, compare (a positional elsewhere)
CASES_OPTION = ("--cases", _path)  # compare's cases, for stale verdicts (a positional elsewhere)
ASK_CONFIDENCE = ("--confidence", _flag)  # judge's (agree's is its interval's level)


def check(name: str, value: Any, optional: bool = False, rule: Rule | None = None,
          flag: str | None = None) -> Any:
    """The value of the API option ``name`` checked by its rule (``rule`` and ``flag`` where
    the command reads it otherwise), path-likes made ``str``; None passes when ``optional``. A
    bad value is a UsageError naming the option's flag, in the command line's words."""
    usual_flag, usual = RULES[name]
    flag = flag or usual_flag
    if value is None and optional:
        return None
    try:
        return (rule or usual)(name, value)
    except UsageError as exc:
        raise UsageError(f"{flag}: {exc}.") from None
