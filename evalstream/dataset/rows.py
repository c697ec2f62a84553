"""The rows of ``stats``: each decoded case becomes a few numbers and codes, never its text.

``Collector`` takes chunks of lines, decodes them with ``Processor.accept`` (the same
decoding, rejects and duplicate-id rule as ``build``), asks ``Sizer`` what ``build`` would
do with every rubric, and appends one row per case to typed arrays (group code, sizes,
which fields it has, the largest judge state). Every ``BATCH_ROWS`` rows the arrays
become numpy columns, and the outcome signatures and labels are counted by key, so those
counts grow with the distinct keys, never with the cases. Metadata keys are counted in
bounded memory by ``MetadataKeys``.

This module does not import Polars: worker processes (``stats_parallel``) use it, and
Polars must neither be loaded in them nor forked.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from typing import Any

import msgspec
import numpy as np
import xxhash

from evalstream.cases.rejects import Reject
from evalstream.checks import tokens
from evalstream.checks.state import FIELD_OF, STATE_NAMES
from evalstream.files.lines import Chunk
from evalstream.pipeline.build import OVER_BUDGET, Processor

BATCH_ROWS = 65_536
MISSING = "(missing)"
STATUSES = ("pass", "fail", "na")
SOURCES = ("synthetic", "human", "imported")
FIELDS = ("messages", "context", "policy", "tool_events", "metadata", "expected")
DISTINCT_CAP = 1_000
KEYS_CAP = 1_000
KEY_DEPTH = 3
VALUE_CHARS = 200
NO_STATE = -1  # state_tokens of a case no judge rubric applies to
_SKETCH_K = 1_024

# Per-case columns and their array typecodes: machine numbers, not Python objects.
CASE_COLUMNS = {
    "g": "I", "line_bytes": "Q", "input_chars": "I", "output_chars": "I", "messages": "H",
    "tool_events": "H", "tool_failures": "H", "state_tokens": "q",
    **{f"has_{f}": "B" for f in FIELDS},
}
_STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}
_SOURCE_CODE = {s: i for i, s in enumerate(SOURCES)}
_ABSENT = object()

Signature = tuple[str | None, ...]  # per rubric: why build skips it, None when it writes it
LabelKey = tuple[int, int, int, int, bool]  # group, rubric, status, source, rubric applies


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

    def remove(self, metadata: dict[str, Any], prefix: str = "", depth: int = 1) -> None:
        """Take one case's metadata back out (a duplicate found after it was counted).

        Exact counts come back exactly; a sketch cannot forget a value, so a value seen
        only in a removed case may still count in an estimate over DISTINCT_CAP values."""
        if depth == 1:
            self.cases -= 1
        for key, value in metadata.items():
            path = prefix + key
            if path not in self.seen:
                self.dropped -= 1
                continue
            self.seen[path] -= 1
            if type(value) is dict and depth < KEY_DEPTH:
                self.objects[path] -= 1
                self.remove(value, path + ".", depth + 1)
            else:
                counts = self.values[path]
                if counts is not None:
                    text = value if type(value) is str and len(value) <= VALUE_CHARS \
                        else value_text(value)
                    counts[text] -= 1
                    if not counts[text]:
                        del counts[text]
            if not self.seen[path]:
                for table in (self.seen, self.values, self.sketches, self.objects):
                    table.pop(path, None)

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


# -- what build would do -------------------------------------------------------------------------
class Sizer:
    """What ``build`` would do with each rubric for one case, without building its records.

    The same rules and counts as ``Processor.checks``: ``requires`` first, then the
    rubric's own ``skip_reason`` (its ``when`` rules), then the budget through the
    processor's ``Budget``. Only the way a judge state's size is found differs: each field
    the case has is encoded once, and a state's compact JSON size is the sum of its
    fields' sizes plus its keys (``{"name":value,...}``). A state too large for its byte
    bound is encoded whole and counted by ``Budget.fit``, as build does (exactly, or, past
    the budget, only until it is clearly over: then the count is a lower bound).
    """

    def __init__(self, processor: Processor) -> None:
        self.rubrics = processor.rubrics.rubrics if processor.rubrics else ()
        self.budget = processor.budget
        self.encode = msgspec.json.Encoder().encode
        self._plans: dict[tuple[bool, ...], list[tuple[Any, ...]]] = {}

    def _plan(self, key: tuple[bool, ...]) -> list[tuple[Any, ...]]:
        present = tuple(name for name, has in zip(STATE_NAMES, (True, True, *key), strict=True)
                        if has)
        pset = frozenset(present)
        plan = []
        for rubric in self.rubrics:
            missing = next((n for n in rubric.requires if n not in pset), None)
            attrs, overhead, shown = None, 0, []
            if rubric.kind == "judge":
                shown = [n for n in rubric.shows if n in pset]
                attrs = tuple((n, FIELD_OF[n]) for n in shown)
                # {"a":x,"b":y}: braces, each quoted key and its colon, commas between.
                overhead = 2 + sum(len(n) + 3 for n in shown) + max(len(shown) - 1, 0)
            plan.append((rubric, f"requires {missing}" if missing else None, pset, attrs,
                         overhead, shown))
        self._plans[key] = plan
        return plan

    def outcomes(self, case: Any) -> tuple[Signature, int | None]:
        """Per rubric, why build would skip it (None: it writes the check), and the token
        size of the case's largest judge state (None when no judge rubric applies)."""
        key = (case.messages is not None, case.context is not None, case.policy is not None,
               case.tool_events is not None)
        plan = self._plans.get(key) or self._plan(key)
        metadata = case.metadata
        budget = self.budget
        encode = self.encode
        sizes: dict[str, int] = {}
        memo: tokens.Memo = {}  # exact counts of this case's field segments, as build keeps
        largest = None
        reasons = []
        for rubric, reason, pset, attrs, overhead, shown in plan:
            if reason is None and rubric.when:
                reason = rubric.skip_reason(pset, metadata)
            if reason is None and attrs is not None:
                size = overhead
                for _, attr in attrs:
                    n = sizes.get(attr)
                    if n is None:
                        n = sizes[attr] = len(encode(getattr(case, attr)))
                    size += n
                if size <= budget.byte_room:
                    n, total = size, size + budget.longest_question_bytes
                else:
                    state = encode({name: getattr(case, attr) for name, attr in attrs})
                    n, longest, _ = budget.fit(state, shown, memo)
                    total = n + longest
                if largest is None or n > largest:
                    largest = n
                if total > budget.max_tokens:
                    reason = OVER_BUDGET
            reasons.append(reason)
        return tuple(reasons), largest


# -- the rows ------------------------------------------------------------------------------------
class Collector:
    """Turns decoded cases into numpy column batches, and counts outcomes, labels and
    metadata by key. Group, signature and rubric codes are its own (see ``absorb``)."""

    def __init__(self, processor: Processor, by: list[str]) -> None:
        self.processor = processor
        self.sizer = Sizer(processor)
        self.by = by
        self.by_paths = [tuple(k.split(".")) for k in by]
        self._top_key = by[0] if len(self.by_paths) == 1 and len(self.by_paths[0]) == 1 \
            else None
        rubrics = processor.rubrics.rubrics if processor.rubrics else ()
        self.rubric_ids: list[str] = [r.id for r in rubrics]  # then labels' unknown ids
        self.rubric_index = {rid: i for i, rid in enumerate(self.rubric_ids)}
        self.n_rubrics = len(self.rubric_ids)
        self.groups: dict[tuple[str, ...], int] = {}
        self.signatures: dict[Signature, int] = {}
        self.sig_applies: list[tuple[bool, ...]] = []
        self.metadata = MetadataKeys()
        self.when_unseen = {key: path for r in rubrics for key, path, _ in r.when}
        self.when_seen: set[str] = set()
        self.batches: list[dict[str, np.ndarray]] = []
        self.outcomes: Counter[tuple[int, int]] = Counter()  # (group, signature) -> cases
        self.labels: Counter[LabelKey] = Counter()  # -> labels
        self.rows = 0
        self._cols = {name: array(code) for name, code in CASE_COLUMNS.items()}
        self._sig = array("I")
        self._labels = [array("I"), array("I"), array("B"), array("B"), array("B")]

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

    def rubric_of(self, rubric_id: str) -> int:
        r = self.rubric_index.get(rubric_id)
        if r is None:
            r = self.rubric_index[rubric_id] = len(self.rubric_ids)
            self.rubric_ids.append(rubric_id)
        return r

    # -- rows
    def take(self, chunk: Chunk) -> tuple[list[tuple[int, Any]], list[Reject]]:
        """Decode a chunk as build does and add a row per case; return the accepted cases
        (line, case) and the rejects."""
        accepted, rejects = self.processor.accept(chunk)
        (g_col, bytes_col, in_col, out_col, msg_col, tool_col, fail_col, tok_col,
         has_m, has_c, has_p, has_t, has_md, has_ex) = self._cols.values()
        sig_col = self._sig
        lab_g, lab_r, lab_st, lab_src, lab_app = self._labels
        outcomes = self.sizer.outcomes
        group_key, group_of = self.group_key, self.group_of
        signature_of, rubric_of = self.signature_of, self.rubric_of
        sig_applies, n_rubrics = self.sig_applies, self.n_rubrics
        add_metadata = self.metadata.add
        first, lines = chunk.line, chunk.lines
        groups, signatures = self.groups, self.signatures
        for line, case in accepted:
            metadata = case.metadata
            key = group_key(metadata)
            g = groups.get(key)
            if g is None:
                g = group_of(key)
            reasons, largest = outcomes(case)
            sig = signatures.get(reasons)
            if sig is None:
                sig = signature_of(reasons)
            g_col.append(g)
            sig_col.append(sig)
            bytes_col.append(len(lines[line - first]))
            in_col.append(len(case.input))
            out_col.append(len(case.output))
            messages, events = case.messages, case.tool_events
            msg_col.append(len(messages) if messages else 0)
            if events:
                tool_col.append(len(events))
                fail_col.append(sum([e.status == "failure" for e in events]))
            else:
                tool_col.append(0)
                fail_col.append(0)
            tok_col.append(NO_STATE if largest is None else largest)
            has_m.append(messages is not None)
            has_c.append(case.context is not None)
            has_p.append(case.policy is not None)
            has_t.append(events is not None)
            has_md.append(metadata is not None)
            expected = case.expected
            has_ex.append(expected is not None)
            if metadata:
                add_metadata(metadata)
                if self.when_unseen:
                    self._note_when_keys(metadata)
            if expected:
                applies = sig_applies[sig]
                for rubric_id, label in expected.items():
                    r = rubric_of(rubric_id)
                    lab_g.append(g)
                    lab_r.append(r)
                    lab_st.append(_STATUS_CODE[label.status])
                    lab_src.append(_SOURCE_CODE[label.source])
                    lab_app.append(r < n_rubrics and applies[r])
        self.rows += len(accepted)
        if len(g_col) >= BATCH_ROWS:
            self.flush()
        return accepted, rejects

    def _note_when_keys(self, metadata: dict[str, Any]) -> None:
        for key, path in list(self.when_unseen.items()):
            if lookup(metadata, path) is not _ABSENT:
                self.when_seen.add(key)
                del self.when_unseen[key]

    def flush(self) -> None:
        """Turn the pending rows into numpy columns; count outcomes and labels by key.

        Each key is packed into one integer, so counting is one ``np.unique`` (a
        multi-column group-by would cost Polars about 90 bytes a row)."""
        if self._cols["g"]:
            self.batches.append({name: np.array(values, dtype=values.typecode)
                                 for name, values in self._cols.items()})
            g = np.array(self._cols["g"], dtype=np.uint64)
            keys = (g << np.uint64(32)) | np.array(self._sig, dtype=np.uint64)
            for key, n in zip(*np.unique(keys, return_counts=True), strict=True):
                self.outcomes[int(key) >> 32, int(key) & 0xFFFFFFFF] += int(n)
            for values in (*self._cols.values(), self._sig):
                del values[:]
        if self._labels[0]:
            g, r, st, src, app = (np.array(a, dtype=np.uint64) for a in self._labels)
            keys = (g << np.uint64(32)) | (r << np.uint64(8)) | (st << np.uint64(4)) | \
                (src << np.uint64(1)) | app
            for key, n in zip(*np.unique(keys, return_counts=True), strict=True):
                k = int(key)
                self.labels[k >> 32, (k >> 8) & 0xFFFFFF, (k >> 4) & 0xF, (k >> 1) & 0x7,
                            bool(k & 1)] += int(n)
            for values in self._labels:
                del values[:]

    # -- merging parts (stats_parallel)
    def forget(self, case: Any) -> None:
        """Take a counted case back out of the outcome, label and metadata counts (its row
        must be dropped from the batches by the caller). For duplicates found late."""
        g = self.groups[self.group_key(case.metadata)]
        reasons, _ = self.sizer.outcomes(case)
        sig = self.signatures[reasons]
        self.outcomes[g, sig] -= 1
        if case.metadata:
            self.metadata.remove(case.metadata)
        for rubric_id, label in (case.expected or {}).items():
            r = self.rubric_index[rubric_id]
            self.labels[g, r, _STATUS_CODE[label.status], _SOURCE_CODE[label.source],
                        r < self.n_rubrics and self.sig_applies[sig][r]] -= 1

    def absorb(self, part: Collector, drop: list[int] | None = None) -> None:
        """Add the rows and counts of a later part of the input (its own codes remapped),
        without the rows at the indexes in ``drop`` (their counts: see ``forget``)."""
        gmap = np.array([self.group_of(key) for key in part.groups] or [0], dtype=np.uint32)
        smap = [self.signature_of(sig) for sig in part.signatures]
        rmap = [self.rubric_of(rid) for rid in part.rubric_ids]
        keep = None
        if drop:
            keep = np.ones(part.rows, dtype=bool)
            keep[drop] = False
        start = 0
        for batch in part.batches:
            n = len(batch["g"])
            if keep is not None:
                mask = keep[start:start + n]
                batch = {name: values[mask] for name, values in batch.items()}
            start += n
            batch["g"] = gmap[batch["g"]]
            self.batches.append(batch)
        for (g, sig), n in part.outcomes.items():
            if n:
                self.outcomes[int(gmap[g]), smap[sig]] += n
        for (g, r, st, src, app), n in part.labels.items():
            if n:
                self.labels[int(gmap[g]), rmap[r], st, src, app] += n
        self.metadata.merge(part.metadata)
        self.when_seen |= part.when_seen
        self.rows += part.rows - len(drop or ())
