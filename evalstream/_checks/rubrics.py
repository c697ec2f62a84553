"""Rubrics: the built-in set, loading TOML rubric files, and when a rubric applies to a case.

A rubric file is data, never code: it is parsed with tomllib and every key is
checked before any case is read. Judge rubrics carry a question and the judge-state
names they show; exact rubrics carry a condition (see ``evalstream.exact``). A pairwise
rubric (``kind = "pairwise"``, issue 28) is a judge rubric asked of two runs' responses to
the same case side by side (``build --pair-with``): its ``shows`` names
``assistant_response`` for the two responses (``response_1`` and ``response_2`` in its
state) and any of the shared fields; never a run's own ``tool_events``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import xxhash

from evalstream._cases import schema
from evalstream._cases.rejects import did_you_mean, nearest, shown_name
from evalstream._checks.state import (
    OWN_FIELDS,
    PAIR_PREAMBLE,
    PAIR_STATE_NAMES,
    PREAMBLE,
    RESPONSES,
    STATE_NAMES,
    question_text,
    system_text,
)
from evalstream._files import toml
from evalstream.errors import RubricError

if TYPE_CHECKING:
    from evalstream._checks import exact

KINDS = ("judge", "exact", "pairwise")
JUDGE_KEYS = {"id", "kind", "question", "shows", "requires", "when", "allows_na"}
# A pairwise answer has no `na` (a tie is `better: "tie"`): its rubric takes no `allows_na`.
PAIRWISE_KEYS = JUDGE_KEYS - {"allows_na"}
EXACT_KEYS = {"id", "kind", "description", "requires", "when", "check"}
MAX_QUESTION_CHARS = 20_000


@dataclass(frozen=True)
class Rubric:
    """One rubric: what its judge is asked and shown, or the condition evalstream checks."""

    id: str
    kind: str  # "judge", "exact" or "pairwise"
    question: str  # the question for a judge rubric, the description for an exact one
    # judge-state names, in the fixed order of STATE_NAMES (PAIR_STATE_NAMES for a pairwise
    # rubric: its `assistant_response` is the two responses)
    shows: tuple[str, ...]
    requires: tuple[str, ...] = ()
    when: tuple[tuple[str, tuple[str, ...], tuple[Any, ...]], ...] = ()  # (key, path, allowed)
    check: exact.Condition | None = None
    hash: str = field(default="", compare=False)
    # Whether `na` is an answer the judge may give (a judge rubric's `allows_na`, default
    # true): when false the judge is asked for pass or fail only, and an `na` answer is
    # unscored (cause `na_not_allowed`), never a verdict.
    allows_na: bool = True

    @property
    def pairwise(self) -> bool:
        """Whether this rubric compares two runs' responses (``build --pair-with``)."""
        return self.kind == "pairwise"

    @property
    def judged(self) -> bool:
        """Whether a judge answers this rubric (a judge or pairwise rubric, not exact)."""
        return self.kind != "exact"

    @property
    def asked(self) -> str:
        """The question as its judge receives it: the preamble of its kind, then the
        rubric's question."""
        return question_text(self.question, self.pairwise)

    @property
    def system(self) -> str:
        """The whole system text its judge receives (the question as ``asked``, then the
        answer instruction of its kind and ``allows_na``): what build's budget counts."""
        return system_text(self.asked, self.allows_na, self.pairwise)

    def skip_reason(self, present: frozenset[str], metadata: dict[str, Any] | None) -> str | None:
        """Why this rubric does not apply to a case, or None when it does."""
        for name in self.requires:
            if name not in present:
                return f"requires {name}"
        return self.when_reason(metadata)

    def when_reason(self, metadata: dict[str, Any] | None) -> str | None:
        """The first `when` rule this case's metadata fails (``when KEY``), or None."""
        for key, path, allowed in self.when:
            value = _lookup(metadata, path)
            if value is _ABSENT or not any(_same(value, a) for a in allowed):
                return f"when {key}"
        return None


@dataclass(frozen=True)
class RubricSet:
    """The rubrics of one run, in file order, with a hash of the whole set."""

    rubrics: tuple[Rubric, ...]
    sources: tuple[str, ...]
    hash: str

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rubrics]

    @property
    def when_keys(self) -> list[str]:
        """Every metadata key named by a `when` rule, in rubric order, once each."""
        return list(dict.fromkeys(key for r in self.rubrics for key, _, _ in r.when))


_ABSENT = object()


def _lookup(metadata: dict[str, Any] | None, path: tuple[str, ...]) -> Any:
    value: Any = metadata
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def metadata_has(metadata: dict[str, Any] | None, key_path: tuple[str, ...]) -> bool:
    """Whether the (dotted) metadata key is present in this case's metadata."""
    return _lookup(metadata, key_path) is not _ABSENT


def _same(value: Any, allowed: Any) -> bool:
    if isinstance(value, bool) or isinstance(allowed, bool):
        return type(value) is type(allowed) and value == allowed
    return bool(value == allowed)


BUILTIN = "builtin"  # in a list of rubric files: the built-in set, at that place


def builtin_text() -> str:
    """The built-in rubric file, as shipped (a starting point for a file of one's own)."""
    # pkgutil reads a package's file as importlib.resources does (from a folder or a zip)
    # for ~1 ms of CPU where importlib.resources took ~10 ms (its imports: pathlib, zipfile):
    # every build with the built-in set paid that.
    import pkgutil

    data = pkgutil.get_data("evalstream._checks", "builtin_rubrics.toml")
    assert data is not None  # a package's loader reads its files
    return data.decode("utf-8")


def builtin() -> RubricSet:
    """The built-in rubric set shipped with evalstream."""
    return RubricSet(*_finish(parse(builtin_text(), "built-in rubrics"), (BUILTIN,)))


# How rubric files are given: every command's option, and the files `rubrics` checks.
GIVEN = "`--rubrics FILE`; `evalstream rubrics FILE`"


def load(paths: list[str]) -> RubricSet:
    """The rubrics of one or more TOML files, in order; ids must be unique across them.
    ``builtin`` in the list stands for the built-in set (``./builtin`` for a file of that
    name)."""
    rubrics: list[Rubric] = []
    for path in paths:
        if path == BUILTIN:
            rubrics.extend(builtin().rubrics)
            continue
        rubrics.extend(parse(toml.read_text(path, "rubric", RubricError, GIVEN), path))
    seen: dict[str, int] = {}
    for r in rubrics:
        if r.id in seen:
            raise RubricError(f"rubric id `{r.id}` is defined twice; rubric ids must be unique.")
        seen[r.id] = 1
    return RubricSet(*_finish(rubrics, tuple(paths)))


def _finish(rubrics: list[Rubric], sources: tuple[str, ...]) -> tuple[tuple[Rubric, ...],
                                                                       tuple[str, ...], str]:
    set_hash = xxhash.xxh3_128(PREAMBLE.encode())
    if any(r.pairwise for r in rubrics):  # only then: the hash of every other set stays
        set_hash.update(PAIR_PREAMBLE.encode())
    for r in rubrics:
        set_hash.update(r.hash.encode())
    return tuple(rubrics), sources, set_hash.hexdigest()


def parse(text: str, source: str) -> list[Rubric]:
    """The rubrics in one TOML document; RubricError says what is wrong and where."""
    doc = toml.parse(text, source, "rubric", "only a few levels", RubricError)
    extra = set(doc) - {"rubric"}
    if extra:
        raise RubricError(f"{source}: unknown top-level key(s) {_list(extra)}; a rubric file "
                          "holds only [[rubric]] tables.")
    tables = doc.get("rubric")
    if not isinstance(tables, list) or not tables:
        raise RubricError(f"{source}: no [[rubric]] tables found.")
    rubrics, seen = [], set()
    for n, table in enumerate(tables, 1):
        rubric = _parse_one(table, f"{source}: rubric {n}")
        if rubric.id in seen:
            raise RubricError(f"{source}: rubric {n}: id `{rubric.id}` is defined twice; "
                              "rubric ids must be unique.")
        seen.add(rubric.id)
        rubrics.append(rubric)
    return rubrics


def _list(names: Any) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names))


def _parse_one(table: dict[str, Any], where: str) -> Rubric:
    rid = table.get("id")
    # The case format's id rule, so that build never writes a judge state that judge, batch
    # prepare or a verdict file would refuse (a 600-character id once passed here).
    if not isinstance(rid, str) or not schema.is_id(rid):
        given = f"the id {shown_name(rid)!r}" if isinstance(rid, str) else "`id`"
        raise RubricError(f"{where}: {given} is not a valid rubric id; rubric ids must be "
                          f"{schema.ID_RULE}.")
    where = f"{where} (`{rid}`)"
    kind = table.get("kind", "judge")
    if kind not in KINDS:
        raise RubricError(f"{where}: `kind` is {kind!r}; allowed: \"judge\" (default), "
                          "\"exact\", \"pairwise\".")
    allowed = {"exact": EXACT_KEYS, "pairwise": PAIRWISE_KEYS}.get(kind, JUDGE_KEYS)
    if kind == "pairwise" and "allows_na" in table:
        raise RubricError(f"{where}: a pairwise rubric takes no `allows_na`: its judge answers "
                          "which response is better, or \"tie\", never na; remove the key.")
    unknown = set(table) - allowed
    if unknown:
        article = "an" if kind == "exact" else "a"
        raise RubricError(f"{where}: unknown key(s) {_list(unknown)}; {article} {kind} rubric "
                          f"takes {_list(allowed)}.{did_you_mean(sorted(unknown)[0], allowed)}")
    requires = _names(table.get("requires", []), f"{where}: `requires`")
    when = _when(table.get("when", {}), where)
    if kind != "exact":
        question = table.get("question")
        if not isinstance(question, str) or not question.strip():
            raise RubricError(f"{where}: `question` must be a non-empty string.")
        if len(question) > MAX_QUESTION_CHARS:
            raise RubricError(f"{where}: `question` is {len(question):,} characters; at most "
                              f"{MAX_QUESTION_CHARS:,}.")
        if "shows" not in table:
            raise RubricError(f"{where}: `shows` is required: the judge-state names the judge "
                              f"may see, from {_list(STATE_NAMES)}.")
        shows = _names(table["shows"], f"{where}: `shows`")
        if not shows:
            raise RubricError(f"{where}: `shows` is empty; a judge must see something.")
        allows_na = table.get("allows_na", True)
        if not isinstance(allows_na, bool):
            raise RubricError(f"{where}: `allows_na` is {allows_na!r}; it takes true (the "
                              "default: the judge may answer na) or false (pass or fail only).")
        if kind == "pairwise":
            shows, requires = _pairwise(shows, requires, where)
            allows_na = False  # its judge answers response_1, response_2 or tie, never na
        check = None
        text = question
    else:
        if "check" not in table:
            raise RubricError(f"{where}: an exact rubric needs a `check` condition.")
        from evalstream._checks import exact  # its dataclasses cost ~3 ms: exact rubrics only

        try:
            check = exact.parse(table["check"])
        except exact.ConditionError as exc:
            raise RubricError(f"{where}: {exc}") from exc
        text = table.get("description", "")
        if not isinstance(text, str):
            raise RubricError(f"{where}: `description` must be a string.")
        shows = ("tool_events",)
        allows_na = True
        if "tool_events" not in requires:
            requires = _ordered({*requires, "tool_events"})
    # The hash covers what decides a verdict: kind, question, shows, requires, when, check,
    # and a judge rubric's `allows_na` when false (so that a rubric without the key keeps the
    # hash it had before the key existed, and verdicts judged under another setting are
    # stale; a pairwise rubric's is always false, said by its kind).
    canonical = json.dumps({k: table[k] for k in sorted(table)
                            if k not in ("description", "allows_na")} |
                           {"kind": kind, "question": text if kind != "exact" else None} |
                           ({} if allows_na or kind != "judge" else {"allows_na": False}),
                           sort_keys=True, ensure_ascii=False, default=str)
    digest = xxhash.xxh3_128_hexdigest(canonical.encode())
    return Rubric(rid, kind, text, shows, requires, when, check, digest, allows_na)


def _ordered(names: set[str]) -> tuple[str, ...]:
    return tuple(n for n in STATE_NAMES if n in names)


def _pairwise(shows: tuple[str, ...], requires: tuple[str, ...],
              where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A pairwise rubric's `shows` and `requires` as names of its state (PAIR_STATE_NAMES):
    `assistant_response` becomes the two responses; a run's own fields are refused."""
    for key, names in (("shows", shows), ("requires", requires)):
        own = [n for n in names if n in OWN_FIELDS]
        if own:
            raise RubricError(
                f"{where}: a pairwise rubric's `{key}` names {_list(own)}: each run has its own, "
                "and a pairwise state shows only what the two cases share and their two "
                "responses; judge tool events with a pointwise rubric of each run.")
    if "assistant_response" not in shows:
        raise RubricError(f"{where}: a pairwise rubric's `shows` must name "
                          "`assistant_response`: its judge compares the two runs' responses "
                          "(shown as response_1 and response_2).")

    def pair_names(names: tuple[str, ...]) -> tuple[str, ...]:
        wanted = set(names) | (set(RESPONSES) if "assistant_response" in names else set())
        return tuple(n for n in PAIR_STATE_NAMES if n in wanted)

    return pair_names(shows), pair_names(requires)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RubricError(f"{where} must be a list of judge-state names.")
    unknown = [v for v in value if v not in STATE_NAMES]
    if unknown:
        near = nearest(unknown[0], STATE_NAMES)
        hint = f" (did you mean `{near}`?)" if near else ""
        raise RubricError(f"{where} names {_list(unknown)}{hint}, not a judge-state name; "
                          f"allowed: {', '.join(STATE_NAMES)}.")
    return _ordered(set(value))


def _when(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...], tuple[Any, ...]], ...]:
    if not isinstance(value, dict):
        raise RubricError(f"{where}: `when` must be a table of metadata key = allowed value(s).")
    rules = []
    for key, allowed in sorted(_flatten(value).items()):
        items = allowed if isinstance(allowed, list) else [allowed]
        if not items or any(isinstance(a, (dict, list)) for a in items):
            raise RubricError(f"{where}: `when.{key}` must be a value or a non-empty list of "
                              "strings, numbers or booleans.")
        rules.append((key, tuple(key.split(".")), tuple(items)))
    return tuple(rules)


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    # TOML turns `{ source.kind = "x" }` into nested tables; a rule names the dotted key.
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_rubrics(paths: list[str] | None = None) -> RubricSet:
    """The rubrics of the TOML files given, or the built-in set when there are none."""
    return load(paths) if paths else builtin()
