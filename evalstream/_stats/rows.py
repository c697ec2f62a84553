"""The rows of ``stats``: each decoded case becomes a few numbers and codes, never its text.

``Collector.take`` takes cases read as ``build`` reads them, with the checks build's own
``Checker`` gives them, and keeps one row of numbers per case (group code, sizes, which
fields it has, the exact tokens of its largest judge state and of its checks); every
``BATCH_ROWS`` rows become numpy columns. Outcome signatures (what became of each rubric)
and labels are counted by key, so those counts grow with the distinct keys, never with the
cases. Metadata keys are counted in bounded
memory by ``MetadataKeys``.

This module does not import Polars: worker processes (``dataset.parallel``) use it, and
Polars must neither be loaded in them nor forked.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import xxhash

from evalstream._cases import schema
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import Record
from evalstream._cases.rejects import Reject
from evalstream._checks import tokens
from evalstream._checks.checker import OVER_BUDGET, Checker
from evalstream._checks.rubrics import RubricSet

BATCH_ROWS = 65_536
MISSING = "(missing)"
STATUSES, SOURCES = schema.LABEL_STATUSES, schema.LABEL_SOURCES
FIELDS = ("messages", "context", "policy", "tool_events", "metadata", "expected")
DISTINCT_CAP = 1_000
KEYS_CAP = 1_000
# Rubric ids named by labels but not in the rubric set: each costs a few KB in the report,
# and a case file can name millions (500 labels a case). Further ones are counted together.
UNKNOWN_RUBRICS_CAP = 1_000
KEY_DEPTH = 3
VALUE_CHARS = 200
NO_STATE = -1  # state_tokens of a case no judge rubric applies to
_SKETCH_K = 1_024

# Per-case columns and their array typecodes: machine numbers, not Python objects.
CASE_COLUMNS = {
    "g": "I", "line_bytes": "Q", "input_chars": "I", "output_chars": "I", "messages": "H",
    "tool_events": "H", "tool_failures": "H", "state_tokens": "q", "judge_tokens": "Q",
    **{f"has_{f}": "B" for f in FIELDS},
}


@dataclass
class Rows:
    """The rows not yet in a batch, one typed array per column (``CASE_COLUMNS``), and the
    code of each row's outcome signature. Appending a value to an array costs a few tens of
    nanoseconds; a tuple per row, transposed later, measured 2 us a case."""

    g: array[int] = field(default_factory=lambda: array("I"))
    line_bytes: array[int] = field(default_factory=lambda: array("Q"))
    input_chars: array[int] = field(default_factory=lambda: array("I"))
    output_chars: array[int] = field(default_factory=lambda: array("I"))
    messages: array[int] = field(default_factory=lambda: array("H"))
    tool_events: array[int] = field(default_factory=lambda: array("H"))
    tool_failures: array[int] = field(default_factory=lambda: array("H"))
    state_tokens: array[int] = field(default_factory=lambda: array("q"))
    judge_tokens: array[int] = field(default_factory=lambda: array("Q"))
    has_messages: array[int] = field(default_factory=lambda: array("B"))
    has_context: array[int] = field(default_factory=lambda: array("B"))
    has_policy: array[int] = field(default_factory=lambda: array("B"))
    has_tool_events: array[int] = field(default_factory=lambda: array("B"))
    has_metadata: array[int] = field(default_factory=lambda: array("B"))
    has_expected: array[int] = field(default_factory=lambda: array("B"))
    signature: array[int] = field(default_factory=lambda: array("I"))

    def columns(self) -> dict[str, array[int]]:
        """The case columns, by name (the signature is not one)."""
        return {name: getattr(self, name) for name in CASE_COLUMNS}
_STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}
_SOURCE_CODE = {s: i for i, s in enumerate(SOURCES)}
_ABSENT = object()

Signature = tuple[str | None, ...]  # per rubric: why build skips it, None when it writes it
LabelKey = tuple[int, int, int, int, bool]  # group, rubric, status, source, rubric applies


def stats_checker(rubric_set: RubricSet, max_tokens: int, tokenizer: str,
                  max_output_tokens: int = tokens.DEFAULT_OUTPUT,
                  volume: int | None = None) -> Checker:
    """The Checker of stats: build's rules, every judge state counted exactly, no states kept
    (each is joined only to be counted); ``volume``: the input's size, when known."""
    return Checker(rubric_set, max_tokens, keep_states=False, tokenizer=tokenizer,
                   exact_tokens=True, max_output_tokens=max_output_tokens, volume=volume)


# -- values --------------------------------------------------------------------------------------
def value_text(value: Any) -> str:
    """A metadata value as text: strings as they are, anything else as compact JSON; long
    values are cut to VALUE_CHARS characters, and a hash tells cut values apart."""
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    if len(text) > VALUE_CHARS:
        digest = xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))
        return f"{text[:VALUE_CHARS]}… #{digest[:8]}"
    return text


def lookup(metadata: dict[str, Any] | None, path: tuple[str, ...]) -> Any:
    """The value at a key path of the metadata, or ``_ABSENT``."""
    value: Any = metadata
    for key in path:
        if type(value) is not dict or key not in value:
            return _ABSENT
        value = value[key]
    return value


def group_text(value: Any) -> str:
    """A group value as shown: MISSING when the key is absent."""
    if value is _ABSENT:
        return MISSING
    return value if type(value) is str and len(value) <= VALUE_CHARS else value_text(value)


# -- metadata keys -------------------------------------------------------------------------------
class Sketch:
    """A k-minimum-values estimate of a distinct count, in fixed memory (~3% error).

    It keeps the ``_SKETCH_K`` smallest 64-bit hashes of the values seen; the union of two
    sketches is the sketch of the union, so parts merge exactly.
    """

    def __init__(self) -> None:
        self.heap: list[int] = []  # negated: the largest kept hash on top
        self.kept: set[int] = set()

    def add(self, text: str) -> None:
        self.add_hash(xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass")))

    def add_hash(self, h: int) -> None:
        if h in self.kept:
            return
        if len(self.heap) < _SKETCH_K:
            heapq.heappush(self.heap, -h)
            self.kept.add(h)
        elif h < -self.heap[0]:
            self.kept.discard(-heapq.heapreplace(self.heap, -h))
            self.kept.add(h)

    def estimate(self) -> int:
        if len(self.heap) < _SKETCH_K:
            return len(self.heap)
        return round((_SKETCH_K - 1) * 2**64 / -self.heap[0])


class MetadataKeys:
    """Counts metadata key paths per case and their distinct values, in bounded memory:
    at most KEYS_CAP paths, exact values up to DISTINCT_CAP per path, then a Sketch."""

    def __init__(self) -> None:
        self.cases = 0
        self.seen: dict[str, int] = {}
        self.values: dict[str, dict[str, int] | None] = {}  # None: over the cap, see sketches
        self.sketches: dict[str, Sketch] = {}
        self.objects: dict[str, int] = {}
        self.dropped = 0

    def add(self, metadata: dict[str, Any], prefix: str = "", depth: int = 1) -> None:
        """Count one case's metadata (call with the top-level dict)."""
        if depth == 1:
            self.cases += 1
        seen, values = self.seen, self.values
        for key, value in metadata.items():
            path = prefix + key
            n = seen.get(path)
            if n is None:
                if len(seen) >= KEYS_CAP:
                    self.dropped += 1
                    continue
                n = 0
                values[path] = {}
            seen[path] = n + 1
            if type(value) is dict and depth < KEY_DEPTH:
                self.objects[path] = self.objects.get(path, 0) + 1
                self.add(value, path + ".", depth + 1)
                continue
            text = value if type(value) is str and len(value) <= VALUE_CHARS else value_text(value)
            counts = values[path]
            if counts is None:
                self.sketches[path].add(text)
                continue
            c = counts.get(text)
            if c is not None:
                counts[text] = c + 1
            elif len(counts) < DISTINCT_CAP:
                counts[text] = 1
            else:
                self._overflow(path, counts)
                self.sketches[path].add(text)

    def _overflow(self, path: str, counts: dict[str, int]) -> None:
        """Past the cap: estimate from here on, seeded with every value so far."""
        sketch = self.sketches[path] = Sketch()
        for text in counts:
            sketch.add(text)
        self.values[path] = None

    def merge(self, other: MetadataKeys) -> None:
        """Add the counts of a later part of the input."""
        self.cases += other.cases
        self.dropped += other.dropped
        for path, n in other.seen.items():
            if path not in self.seen:
                if len(self.seen) >= KEYS_CAP:
                    self.dropped += n
                    continue
                self.seen[path] = 0
                self.values[path] = {}
            self.seen[path] += n
            if path in other.objects:
                self.objects[path] = self.objects.get(path, 0) + other.objects[path]
            mine, theirs = self.values[path], other.values[path]
            if mine is not None and theirs is not None:
                for text, c in theirs.items():
                    mine[text] = mine.get(text, 0) + c
                if len(mine) > DISTINCT_CAP:
                    self._overflow(path, mine)
                continue
            if mine is not None:
                self._overflow(path, mine)
            sketch = self.sketches[path]
            if theirs is not None:
                for text in theirs:
                    sketch.add(text)
            else:
                for h in other.sketches[path].kept:
                    sketch.add_hash(h)


# -- the rows ------------------------------------------------------------------------------------
class Collector:
    """Turns decoded cases and their checks into column batches, and counts outcomes,
    labels and metadata by key. Group, signature and rubric codes are its own (see
    ``absorb``). The checks come from the ``Checker`` build uses: stats counts exactly what
    build would write and skip."""

    def __init__(self, rubrics: RubricSet, by: list[str]) -> None:
        self.by = by
        self.by_paths = [tuple(k.split(".")) for k in by]
        self._top_key = by[0] if len(self.by_paths) == 1 and len(self.by_paths[0]) == 1 \
            else None
        self.rubric_ids: list[str] = list(rubrics.ids)  # then labels' unknown ids
        self.rubric_index = {rid: i for i, rid in enumerate(self.rubric_ids)}
        self.n_rubrics = len(self.rubric_ids)
        self.groups: dict[tuple[str, ...], int] = {}
        self.signatures: dict[Signature, int] = {}
        self.sig_applies: list[tuple[bool, ...]] = []
        self.metadata = MetadataKeys()
        self.batches: list[dict[str, np.ndarray]] = []
        self.outcomes: Counter[tuple[int, int]] = Counter()  # (group, signature) -> cases
        self.labels: Counter[LabelKey] = Counter()  # -> labels
        self.labels_unlisted = 0  # labels of unknown rubric ids past UNKNOWN_RUBRICS_CAP
        self.rows = 0
        # Label keys not yet counted: counted a batch at a time (a Counter update per label
        # cost 0.7 us).
        self._pending = Rows()
        self._pending_labels: list[LabelKey] = []

    # -- codes
    def group_key(self, metadata: dict[str, Any] | None) -> tuple[str, ...]:
        if self._top_key is not None:  # the common case, one top-level key: no loop
            value = metadata.get(self._top_key, _ABSENT) if type(metadata) is dict else _ABSENT
            return (value if type(value) is str and len(value) <= VALUE_CHARS
                    else group_text(value),)
        return tuple(group_text(lookup(metadata, p)) for p in self.by_paths)

    def group_of(self, key: tuple[str, ...]) -> int:
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = len(self.groups)
        return g

    def signature_of(self, reasons: Signature) -> int:
        sig = self.signatures.get(reasons)
        if sig is None:
            sig = self.signatures[reasons] = len(self.signatures)
            self.sig_applies.append(tuple(r is None or r == OVER_BUDGET for r in reasons))
        return sig

    def rubric_of(self, rubric_id: str) -> int | None:
        """The rubric's code; None for an id not in the rubric set once UNKNOWN_RUBRICS_CAP
        such ids have codes (the first ones seen keep theirs, in input order)."""
        r = self.rubric_index.get(rubric_id)
        if r is None:
            if len(self.rubric_ids) - self.n_rubrics >= UNKNOWN_RUBRICS_CAP:
                return None
            r = self.rubric_index[rubric_id] = len(self.rubric_ids)
            self.rubric_ids.append(rubric_id)
        return r

    # -- rows
    def take(self, records: Iterable[Record[Any] | Reject], checker: Checker,
             reject: Callable[[Reject], object], log: CaseLog | None = None) -> None:
        """The stats loop: a row per case read (its checks from ``checker``), counting
        outcomes, labels and metadata; each reject to ``reject``. With a ``log`` (a worker's
        range) every case is logged for the parent's duplicate check.

        One loop with its lookups bound once: a method call per case, with its attribute
        lookups, measured 3 us a case slower (9% of a stats run)."""
        check, group_key, groups = checker.check, self.group_key, self.groups
        question_tokens = checker.question_tokens
        framing = checker.budget.reserved.framing  # each request's, as build's budget counts it
        signatures, sig_applies = self.signatures, self.sig_applies
        rubric_index, n_rubrics = self.rubric_index, self.n_rubrics
        add_metadata, labels = self.metadata.add, self._pending_labels
        rows = self._pending
        for item in records:
            if type(item) is Reject:
                reject(item)
                continue
            line_no, offset, raw, case = item  # type: ignore[misc]
            if log is not None:
                log.add(case.id, line_no, offset, 0)
            metadata = case.metadata
            key = group_key(metadata)
            g = groups.get(key)
            if g is None:
                g = self.group_of(key)
            reasons = []
            largest = NO_STATE
            judge_tokens = 0
            for outcome in check(case, line_no):
                reason = outcome.reason
                reasons.append(reason)
                figures = outcome.tokens
                if figures is not None and figures.exact is not None:  # stats counts all
                    n = figures.exact.state
                    if n > largest:
                        largest = n
                    if reason is None:
                        judge_tokens += n + question_tokens(outcome.plan.rubric.id) + framing
            signature = tuple(reasons)
            sig = signatures.get(signature)
            if sig is None:
                sig = self.signature_of(signature)
            messages, events, expected = case.messages, case.tool_events, case.expected
            rows.g.append(g)
            rows.signature.append(sig)
            rows.line_bytes.append(len(raw))
            rows.input_chars.append(len(case.input))
            rows.output_chars.append(len(case.output))
            rows.messages.append(len(messages) if messages else 0)
            rows.tool_events.append(len(events) if events else 0)
            rows.tool_failures.append(sum([e.status == "failure" for e in events])
                                      if events else 0)
            rows.state_tokens.append(largest)
            rows.judge_tokens.append(judge_tokens)
            rows.has_messages.append(messages is not None)
            rows.has_context.append(case.context is not None)
            rows.has_policy.append(case.policy is not None)
            rows.has_tool_events.append(events is not None)
            rows.has_metadata.append(metadata is not None)
            rows.has_expected.append(expected is not None)
            if metadata:
                add_metadata(metadata)
            if expected:
                applies = sig_applies[sig]
                for rubric_id, label in expected.items():
                    r = rubric_index.get(rubric_id)
                    if r is None:
                        r = self.rubric_of(rubric_id)
                        if r is None:  # past UNKNOWN_RUBRICS_CAP unknown ids
                            self.labels_unlisted += 1
                            continue
                    labels.append((g, r, _STATUS_CODE[label.status], _SOURCE_CODE[label.source],
                                   r < n_rubrics and applies[r]))
            self.rows += 1
            if len(rows.g) >= BATCH_ROWS:
                self.flush()
                rows = self._pending

    def flush(self) -> None:
        """Turn the pending rows into one batch of numpy columns, and count their outcomes
        by (group, signature) in one pass (a Counter update per case cost more)."""
        rows = self._pending
        if rows.g:
            self.batches.append({name: np.array(values, dtype=values.typecode)
                                 for name, values in rows.columns().items()})
            self.outcomes.update(zip(rows.g, rows.signature, strict=True))
            self._pending = Rows()
        self.labels.update(self._pending_labels)
        self._pending_labels.clear()

    # -- merging parts (dataset.parallel)
    def absorb(self, part: Collector) -> None:
        """Add the rows and counts of a later part of the input (its own codes remapped)."""
        gmap = np.array([self.group_of(key) for key in part.groups] or [0], dtype=np.uint32)
        smap = [self.signature_of(sig) for sig in part.signatures]
        rmap = [self.rubric_of(rid) for rid in part.rubric_ids]
        for batch in part.batches:
            batch["g"] = gmap[batch["g"]]
            self.batches.append(batch)
        for (g, sig), n in part.outcomes.items():
            if n:
                self.outcomes[int(gmap[g]), smap[sig]] += n
        for (g, r, st, src, app), n in part.labels.items():
            mapped = rmap[r]
            if mapped is None:
                self.labels_unlisted += n
            elif n:
                self.labels[int(gmap[g]), mapped, st, src, app] += n
        self.labels_unlisted += part.labels_unlisted
        self.metadata.merge(part.metadata)
        self.rows += part.rows
