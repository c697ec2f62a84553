"""A jury: several judges, each asked once or several times, whose votes make one verdict
(issue 26). ``judge --jury FILE`` reads it from a TOML file; ``judge --model M`` is a jury of
one, and ``--samples K`` asks that one judge K times.

A jury file is data, never code: parsed with tomllib and every key checked before any
state is read, each error a sentence naming the file, the juror and the key::

    rule = "majority"            # or "unanimous-pass", "any-fail", "escalate" (_verdicts.rules)
    threshold = 0.8              # "escalate" only: trust the first judge at this confidence
    name = "small-panel"         # optional: what verdicts name the panel (judge.model)

    [[judge]]
    name = "mini"                # unique in the file (default: the model)
    model = "gpt-4.1-mini"
    provider = "openai"          # and every other judge option: base_url, temperature,
    samples = 1                  # max_output_tokens, response_format, reasoning_effort,
    price_in = 0.4               # thinking_budget, deployment, api_version, region,
    price_out = 1.6              # api_key_env; each as its --option says

A juror is a ``JudgeConfig`` with its provider, a name, how many samples, its prices and
its key's variable: every vote is a request through the one request builder
(``request.build``) and the one answer store, keyed as ``request.sample_key`` says.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import xxhash

from evalstream._files import toml
from evalstream._judge.request import JudgeConfig
from evalstream._verdicts.cost import usd
from evalstream._verdicts.rules import DEFAULT_RULE, RULES
from evalstream.errors import JuryError, UsageError

if TYPE_CHECKING:
    from evalstream._verdicts.records import JudgeInfo

MAX_SAMPLES = 100  # votes of one juror on one state: more is a mistake, not a measurement
MAX_JURORS = 50
MAX_NAME_CHARS = 64
TOP_KEYS = ("rule", "name", "threshold", "judge")
# The escalation rule (issue 29, ``_judge.escalation``): two judges, and the first judge's
# confidence below which the second is asked.
ESCALATE, DEFAULT_THRESHOLD = "escalate", 0.8
# Every key of a [[judge]] table: who it is, its config (JudgeConfig's fields), its votes.
CONFIG_KEYS = ("provider", "base_url", "temperature", "max_output_tokens", "response_format",
               "reasoning_effort", "thinking_budget", "deployment", "api_version", "region")
JUROR_KEYS = ("name", "model", *CONFIG_KEYS, "samples", "price_in", "price_out", "api_key_env")
_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "model": (str,), "provider": (str,), "base_url": (str,),
    "temperature": (int, float, str), "max_output_tokens": (int,), "response_format": (str,),
    "reasoning_effort": (str,), "thinking_budget": (int,), "deployment": (str,),
    "api_version": (str,), "region": (str,), "samples": (int,), "price_in": (int, float),
    "price_out": (int, float), "api_key_env": (str,)}
_OPTION = re.compile(r"--([a-z][a-z-]*)")


@dataclass(frozen=True)
class Juror:
    """One judge of a jury: its name, who is asked and how (``config``), how many samples,
    the prices of its tokens (USD per million; None: not given) and its key's variable
    (None: the provider's)."""

    name: str
    config: JudgeConfig
    samples: int = 1
    price_in: float | None = None
    price_out: float | None = None
    api_key_env: str | None = None

    @property
    def priced(self) -> bool:
        return self.price_in is not None and self.price_out is not None

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for these tokens at this juror's prices (0 without prices)."""
        if self.price_in is None or self.price_out is None:
            return 0.0
        return usd(input_tokens, output_tokens, self.price_in, self.price_out)


@dataclass(frozen=True)
class Jury:
    """The judges a run asks and the rule that makes their votes one decision; ``path``:
    the jury file (None: ``--model``, a jury of one)."""

    rule: str
    jurors: tuple[Juror, ...]
    path: str | None = None
    name: str = ""
    threshold: float | None = None  # rule "escalate": the first judge's confidence to trust

    @property
    def panel(self) -> bool:
        """Whether verdicts carry ``votes`` and ``panel``: a jury file, or several samples.
        ``--model`` alone writes the verdicts it always wrote, byte for byte."""
        return self.path is not None or any(j.samples > 1 for j in self.jurors)

    @property
    def votes(self) -> int:
        """Votes on each judge state: every juror's samples."""
        return sum(j.samples for j in self.jurors)

    @property
    def priced(self) -> bool:
        return all(j.priced for j in self.jurors)

    @property
    def hash(self) -> str:
        """xxh3-128 of the rule and every juror's name, samples and config hash: what shaped
        the panel's verdicts besides the state."""
        parts = [self.rule, *(f"{j.name}\n{j.samples}\n{j.config.hash}" for j in self.jurors)]
        if self.threshold is not None:  # escalation's (other rules' hashes are unchanged)
            parts.append(f"threshold {self.threshold!r}")
        return xxhash.xxh3_128("\n\n".join(parts).encode()).hexdigest()

    def info(self) -> JudgeInfo:
        """Who judged, as a panel's verdicts record it: one juror's model, provider, host and
        temperature (a judge asked several times), or the jury's name and ``provider``
        ``jury``; and the panel's hash."""
        from evalstream._verdicts.records import JudgeInfo

        if self.path is None:
            one = self.jurors[0].config.info
            return JudgeInfo(one.model, one.provider, one.base_url, one.temperature, self.hash)
        return JudgeInfo(self.name, "jury", "", None, self.hash)


def single(config: JudgeConfig, samples: int = 1, price_in: float | None = None,
           price_out: float | None = None, api_key_env: str | None = None) -> Jury:
    """``--model`` (and ``--samples``): a jury of one, named for its model, deciding by
    majority (the mode of its samples)."""
    if not 1 <= samples <= MAX_SAMPLES:
        raise UsageError(f"--samples must be from 1 to {MAX_SAMPLES}, not {samples}.")
    return Jury(DEFAULT_RULE, (Juror(config.model, config, samples, price_in, price_out,
                                     api_key_env),))


def read(path: str) -> Jury:
    """The jury of a TOML file; JuryError naming the file, the juror and the key for anything
    that cannot be used."""
    return parse(toml.read_text(path, "jury", JuryError, "`--jury FILE`"), path)


def parse(text: str, source: str) -> Jury:
    """The jury of a jury file's text (``source``: its name, for the sentences)."""
    doc = toml.parse(text, source, "jury", "two levels", JuryError)
    extra = sorted(set(doc) - set(TOP_KEYS))
    if extra:
        raise JuryError(f"{source}: unknown top-level key {_names(extra)}; a jury file holds "
                        f"{_names(TOP_KEYS)} ([[judge]] tables, one per juror).")
    rule = doc.get("rule", DEFAULT_RULE)
    if rule not in RULES:
        raise JuryError(f"{source}: `rule` must be one of {_names(RULES)} (default "
                        f"{DEFAULT_RULE}), not {rule!r}.")
    tables = doc.get("judge")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict)
                                                            for t in tables):
        raise JuryError(f"{source}: no [[judge]] tables: give one per juror, each with at least "
                        "`model` (e.g. [[judge]] model = \"gpt-4.1-mini\").")
    if len(tables) > MAX_JURORS:
        raise JuryError(f"{source}: {len(tables)} [[judge]] tables; a jury has at most "
                        f"{MAX_JURORS}.")
    threshold = _threshold(doc, rule, len(tables), source)
    jurors: list[Juror] = []
    for n, table in enumerate(tables, 1):
        # Escalation reads the first judge's confidence: its log probabilities are asked for.
        juror = _juror(table, source, n, confidence=threshold is not None and n == 1)
        if any(j.name == juror.name for j in jurors):
            raise JuryError(f"{source}: judge {n}: the name `{juror.name}` is given twice; each "
                            "juror needs a name of its own (`name = \"...\"`).")
        jurors.append(juror)
    name = doc.get("name", "+".join(j.name for j in jurors))
    if not _is_name(name):
        raise JuryError(f"{source}: `name` must be text of 1 to {MAX_NAME_CHARS} visible "
                        f"characters, not {name!r}.")
    return Jury(rule, tuple(jurors), source, name, threshold)


def _threshold(doc: dict[str, Any], rule: str, judges: int, source: str) -> float | None:
    """The escalation threshold (rule ``escalate``: two judges, a number between 0 and 1), or
    None for the other rules (which take none)."""
    if rule != ESCALATE:
        if "threshold" in doc:
            raise JuryError(f"{source}: `threshold` is the first judge's confidence below which "
                            f"rule = \"{ESCALATE}\" asks the second; rule {rule!r} takes none.")
        return None
    if judges != 2:
        raise JuryError(f"{source}: rule = \"{ESCALATE}\" takes two [[judge]] tables (the first "
                        f"judge, then the stronger one asked where it is unsure), not {judges}.")
    threshold = doc.get("threshold", DEFAULT_THRESHOLD)
    if type(threshold) not in (int, float) or not 0 < threshold < 1:
        raise JuryError(f"{source}: `threshold` must be a number between 0 and 1 (e.g. 0.8), "
                        f"not {threshold!r}.")
    return float(threshold)


def _juror(table: dict[str, Any], source: str, n: int, confidence: bool = False) -> Juror:
    where = f"{source}: judge {n}" + (f" (`{table['name']}`)" if isinstance(
        table.get("name"), str) else "")
    unknown = sorted(set(table) - set(JUROR_KEYS))
    if unknown:
        from evalstream._cases.rejects import did_you_mean

        raise JuryError(f"{where}: unknown key {_names(unknown)}."
                        f"{did_you_mean(unknown[0], JUROR_KEYS)} A juror takes "
                        f"{_names(JUROR_KEYS)}.")
    for key, value in table.items():
        if type(value) not in _TYPES[key] or (type(value) is float and not math.isfinite(value)):
            kinds = " or ".join({str: "text", int: "a whole number", float: "a number"}[t]
                                for t in _TYPES[key])
            raise JuryError(f"{where}: `{key}` must be {kinds}, not {value!r}.")
    if "model" not in table:
        raise JuryError(f"{where}: `model` is missing; every juror names its model (e.g. "
                        "model = \"gpt-4.1-mini\").")
    name = table.get("name", table["model"])
    if not _is_name(name):
        raise JuryError(f"{where}: `name` must be text of 1 to {MAX_NAME_CHARS} visible "
                        f"characters, not {name!r}.")
    samples = table.get("samples", 1)
    if not 1 <= samples <= MAX_SAMPLES:
        raise JuryError(f"{where}: `samples` must be from 1 to {MAX_SAMPLES}, not {samples}.")
    prices = {}
    for key in ("price_in", "price_out"):
        if key in table and not table[key] > 0:
            raise JuryError(f"{where}: `{key}` must be more than 0 (USD per million tokens), "
                            f"not {table[key]!r}.")
        prices[key] = float(table[key]) if key in table else None
    if (prices["price_in"] is None) != (prices["price_out"] is None):
        raise JuryError(f"{where}: give both `price_in` and `price_out`, or neither.")
    settings: dict[str, Any] = {k: table[k] for k in CONFIG_KEYS if k in table}
    temperature = settings.get("temperature")
    if isinstance(temperature, str):
        if temperature != "none":
            raise JuryError(f"{where}: `temperature` must be a number from 0 to 2, or \"none\" "
                            f"to send none, not {temperature!r}.")
        settings["temperature"] = None
    elif temperature is not None:
        settings["temperature"] = float(temperature)
    try:
        config = JudgeConfig(model=table["model"], confidence=confidence, **settings)
    except UsageError as exc:  # JudgeConfig's sentence, in the file's words
        said = _OPTION.sub(lambda m: f"`{m.group(1).replace('-', '_')}`", str(exc))
        raise JuryError(f"{where}: {said}") from None
    key_env = table.get("api_key_env")
    if key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env):
        raise JuryError(f"{where}: `api_key_env` names an environment variable (letters, "
                        f"digits, _), not {key_env!r}.")
    return Juror(name, config, samples, prices["price_in"], prices["price_out"], key_env)


def _is_name(name: Any) -> bool:
    return isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS and name.isprintable() \
        and name.strip() == name


def _names(names: Any) -> str:
    return ", ".join(f"`{n}`" for n in names)
