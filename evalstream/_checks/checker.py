"""Which checks a case gets and what each judge sees: the one answer for build and stats.

For every rubric, in rubric order, ``Checker.check`` says whether the check applies
(``requires`` first, then ``when``), and for a judge rubric builds its state (only the
shown fields the case has, under the fixed names, in the fixed order) and decides the
token budget; for an exact rubric it evaluates the condition. Every outcome is counted in
``CheckTally``: written, or skipped with its reason.

What a rubric shows and withholds depends only on which fields the case has, so it is
planned once per pattern of present fields (``Plan``).

A pairwise rubric applies to two runs' cases of one id (``build --pair-with``), never to a
case alone: ``check`` skips it (reason ``pairwise``), ``check_pair`` gives its states in
both orders from the same plans and budget (``PairOrder`` stands for the case).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from evalstream._cases.rejects import did_you_mean
from evalstream._checks import encodings, tokens
from evalstream._checks.rubrics import Rubric, RubricSet, metadata_has
from evalstream._checks.state import (
    FIELD_OF,
    NEVER_SHOWN,
    OWN_FIELDS,
    PAIR_FIELD_OF,
    PAIR_STATE_NAMES,
    SHARED,
    STATE_NAMES,
    Exposure,
    Sizes,
    Tokens,
)
from evalstream._files.outputs import escape_line_breaks

OVER_BUDGET = "over budget"
PAIRWISE = "pairwise"  # a pairwise rubric, for a case on its own (it needs --pair-with)
NOT_PAIRWISE = "not pairwise"  # a judge or exact rubric, for a pair (build each run alone)
MAX_OVER_BUDGET_LISTED = 1_000
MAX_KEYS_SEEN = 1_000


class OverBudget(msgspec.Struct):
    """A check that was not written because its judge request would not fit the budget.

    ``tokens`` (the state, the longest system text, the request's framing and the answer's
    bound, in tokens of the run's tokenizer) is an exact count when ``exact`` is true;
    otherwise counting stopped once the state was over the budget and ``tokens`` is a lower
    bound: at least that many.
    """

    line: int
    case_id: str
    rubric_id: str
    tokens: int
    exact: bool


@dataclass(frozen=True, eq=False, slots=True)  # compared and hashed by identity
class Plan:
    """What one rubric does with the cases that have one pattern of present fields."""

    rubric: Rubric
    reason: str | None  # the `requires` this pattern lacks, or None
    present: frozenset[str]
    shown: list[str]  # judge-state names, in the fixed order
    withheld: list[str]  # fields the case has that this rubric does not show
    hidden: list[str]  # harness fields the case has: never shown
    # (b'{"name":' or b',"name":', case attribute) per shown field: a state is joined from
    # fields each encoded once per case, however many rubrics show them.
    keys: tuple[tuple[bytes, str], ...]
    question: msgspec.Raw  # the question as JSON, preamble included (null for exact rubrics)
    skipped: Check | None  # the outcome when ``reason`` is set: the same for every such case
    slot: int  # where ``Checker`` counts this plan's usual outcome (``reason``, or written)
    # (state name, case attribute) per shown field, when no other judge rubric of the pattern
    # shows any of them: the state is then encoded in one call (``Checker._judge``); else None
    alone: tuple[tuple[str, str], ...] | None


class PairOrder(NamedTuple):
    """One order of a pair, read by a pairwise plan as a case is read by a plan: the shared
    fields (run A's, equal to run B's where a pairwise rubric shows them) and the two
    responses in this order."""

    id: str
    input: str
    messages: Any
    context: Any
    policy: str | None
    response_1: str
    response_2: str


class Check(msgspec.Struct, frozen=True, gc=False):
    """One rubric's outcome for one case (a Struct: made in C, 4x faster than a NamedTuple,
    and build makes one per judge check)."""

    plan: Plan
    reason: str | None  # why it is skipped; None when it is written
    state: bytes | None  # a judge state's JSON (also when over budget); None otherwise, and
    # always None when the Checker does not keep states (its figures are in ``tokens``)
    tokens: Tokens | None  # the state's budget figures
    passed: bool | None  # an exact rubric's result
    evidence: list[str] | None  # the ids of the tool events an exact rubric read


@dataclass
class CheckTally:
    """Checks written and skipped, by rubric and reason, and what the judges were shown."""

    checks: int = 0
    skipped: int = 0
    checks_by_rubric: Counter[str] = field(default_factory=Counter)
    skipped_by_rubric: defaultdict[str, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter))
    exposure: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    over_budget: list[OverBudget] = field(default_factory=list)
    # Cases that have each metadata key a `when` rule names (counted, not just seen, so that
    # taking a late duplicate back out cannot lose the only sighting).
    when_keys_seen: Counter[str] = field(default_factory=Counter)
    # Top-level metadata keys seen (at most MAX_KEYS_SEEN), to suggest the key a `when`
    # rule that never matched probably meant.
    metadata_keys: set[str] = field(default_factory=set)
    # Expected labels: for rubrics outside the set (by id, at most MAX_KEYS_SEEN ids), and on
    # cases where their rubric does not apply: neither can ever meet a judge's verdict.
    labels_outside: Counter[str] = field(default_factory=Counter)
    labels_not_applicable: int = 0

    def count(self, rubric_id: str, reason: str | None, shown: list[str], n: int) -> None:
        """Count ``n`` outcomes of one rubric: written (showing ``shown``) or skipped."""
        if reason is None:
            self.checks += n
            self.checks_by_rubric[rubric_id] += n
            exposure = self.exposure[rubric_id]
            for name in shown:
                exposure[name] += n
        else:
            self.skipped += n
            self.skipped_by_rubric[rubric_id][reason] += n

    def over(self, item: OverBudget) -> None:
        if len(self.over_budget) < MAX_OVER_BUDGET_LISTED:
            self.over_budget.append(item)

    def merge(self, other: CheckTally) -> None:
        """Add the counts of a later part of the same input."""
        self.checks += other.checks
        self.skipped += other.skipped
        self.checks_by_rubric.update(other.checks_by_rubric)
        for rubric, reasons in other.skipped_by_rubric.items():
            self.skipped_by_rubric[rubric].update(reasons)
        for rubric, names in other.exposure.items():
            self.exposure[rubric].update(names)
        for item in other.over_budget:
            self.over(item)
        self.when_keys_seen.update(other.when_keys_seen)
        if len(self.metadata_keys) < MAX_KEYS_SEEN:
            self.metadata_keys |= set(sorted(other.metadata_keys)[:MAX_KEYS_SEEN])
        for rubric_id, n in other.labels_outside.items():
            self.label_outside(rubric_id, n)
        self.labels_not_applicable += other.labels_not_applicable

    def label_outside(self, rubric_id: str, n: int = 1) -> None:
        """Count ``n`` labels for a rubric id outside the set (ids past the cap as one)."""
        key = rubric_id if rubric_id in self.labels_outside or \
            len(self.labels_outside) < MAX_KEYS_SEEN else "..."
        self.labels_outside[key] += n

    def when_warnings(self, rubrics: RubricSet, name_keys: bool) -> list[str]:
        """A warning for every metadata key a `when` rule names that no case has; with
        ``name_keys``, the key seen in the data that it probably meant (``stats`` names
        metadata keys; build's report never holds harness data, so it points to stats)."""
        keys = self.metadata_keys
        hint = " (`evalstream stats` lists the keys the cases have)"
        return [f"no case has metadata key `{key}`, named by a `when` rule: the rubrics that "
                "use it never apply."
                + (("" if key.split(".")[0] in keys else did_you_mean(key, keys))
                   if name_keys else hint)
                for key in rubrics.when_keys if not self.when_keys_seen[key]]

    def subtract(self, other: CheckTally) -> None:
        """Take back what ``other`` counted (a case found to be a duplicate after the fact);
        its over-budget entries are the caller's to drop, by line."""
        self.checks -= other.checks
        self.skipped -= other.skipped
        self.checks_by_rubric.subtract(other.checks_by_rubric)
        for rubric, reasons in other.skipped_by_rubric.items():
            self.skipped_by_rubric[rubric].subtract(reasons)
        for rubric, names in other.exposure.items():
            self.exposure[rubric].subtract(names)
        self.when_keys_seen.subtract(other.when_keys_seen)
        self.labels_outside.subtract(other.labels_outside)
        self.labels_not_applicable -= other.labels_not_applicable


class Checker:
    """Answers, for one case at a time, which checks it gets and what each judge sees."""

    def __init__(self, rubrics: RubricSet, max_tokens: int = tokens.DEFAULT_BUDGET,
                 keep_states: bool = True, tokenizer: str = encodings.DEFAULT,
                 exact_tokens: bool = False, max_output_tokens: int = tokens.DEFAULT_OUTPUT,
                 volume: int | None = None) -> None:
        """``exact_tokens``: count every judge state exactly (``stats``, ``build
        --exact-tokens``), not only those whose bytes do not fit the budget.
        ``max_output_tokens``: the judge's bound on its answer, which the budget holds back.
        ``volume``: the bytes of input the run will read, when known (``tokens.Budget``)."""
        self.rubrics = rubrics
        # Without the states (stats), each judge check carries its size and token figures
        # only: the same rules and counts, without joining every state's bytes.
        self.keep_states = keep_states
        self._tally = CheckTally()
        # Outcomes are counted here and folded into the tally when it is read: a plan's usual
        # outcome (its `requires` skip, or written) by its slot, one list increment; the
        # others (`when` skips, over budget) by (slot, reason). Counting by (plan, reason)
        # in one Counter measured 2 us a case.
        self._all_plans: list[Plan] = []
        self._usual: list[int] = []
        self._other: Counter[tuple[int, str]] = Counter()
        self.encode = msgspec.json.Encoder().encode
        judges = [r for r in rubrics.rubrics if r.judged]
        self._questions = {r.id: msgspec.Raw(escape_line_breaks(self.encode(r.asked)))
                           for r in judges}
        # The budget counts each rubric's whole system text, as the judge sends it.
        self.budget = tokens.Budget(max_tokens, [r.system for r in judges],
                                    encodings.check_name(tokenizer), exact_tokens,
                                    output=max_output_tokens,
                                    pairwise=any(r.pairwise for r in judges), volume=volume)
        # The bytes a state may have and fit without being counted; none when every state
        # is counted (a state is at least `{}`). Read once here, not twice for every state.
        self._byte_room = -1 if self.budget.exact else self.budget.byte_room
        # The case attributes two cases of a pair must hold equal: `input`, and every shared
        # field a pairwise rubric shows (shown once, it must be the same in both runs).
        shown = {n for r in rubrics.rubrics if r.pairwise for n in r.shows}
        self.must_be_equal = tuple(attr for name, attr in SHARED.items()
                                   if name == "user_input" or name in shown)
        self._judge_index = {r.id: i for i, r in enumerate(judges)}
        self._plans: dict[tuple[bool, ...], list[Plan]] = {}
        self._when_keys = {key: path for r in rubrics.rubrics for key, path, _ in r.when}
        self._rubric_index = {r.id: i for i, r in enumerate(rubrics.rubrics)}

    def preload(self) -> None:
        """Load now what the first check would load when every state is counted (stats,
        --exact-tokens): the engine calls it before forking its workers, which then share it."""
        self.budget.preload()

    @property
    def tally(self) -> CheckTally:
        """Every outcome counted so far."""
        plans, usual = self._all_plans, self._usual
        for slot, n in enumerate(usual):
            if n:
                plan = plans[slot]
                self._tally.count(plan.rubric.id, plan.reason, plan.shown, n)
                usual[slot] = 0
        for (slot, reason), n in self._other.items():
            self._tally.count(plans[slot].rubric.id, reason, plans[slot].shown, n)
        self._other.clear()
        return self._tally

    @tally.setter
    def tally(self, tally: CheckTally) -> None:
        self._usual = [0] * len(self._usual)
        self._other.clear()
        self._tally = tally

    def check(self, case: Any, line: int) -> list[Check]:
        """Every rubric's outcome for one valid case, in rubric order, counted in the tally."""
        key = (case.messages is not None, case.context is not None, case.policy is not None,
               case.tool_events is not None, case.metadata is not None,
               case.expected is not None)
        plans = self._plans.get(key) or self._plan(key)
        metadata = case.metadata
        if self._when_keys and metadata:
            self._note_when_keys(metadata)
        fields: dict[str, bytes] = {}  # each shown field encoded once per case
        counted: dict[tuple[bytes, bool], int] = {}  # and counted once, when all are counted
        out = []
        usual, other = self._usual, self._other
        for plan in plans:
            rubric = plan.rubric
            if plan.skipped is not None:
                check = plan.skipped
            elif rubric.when and (reason := rubric.when_reason(metadata)) is not None:
                check = Check(plan, reason, None, None, None, None)
            elif rubric.check is not None:
                events = case.tool_events
                passed, read = rubric.check.evaluate(events)
                check = Check(plan, None, None, None, passed, [events[i].id for i in sorted(read)])
            else:
                check = self._judge(case, line, plan, fields, counted)
            if check.reason is plan.reason:
                usual[plan.slot] += 1
            else:
                other[plan.slot, check.reason] += 1  # type: ignore[index]
            out.append(check)
        if case.expected:
            self._note_labels(case.expected, out)
        return out

    def mismatch(self, a: Any, b: Any) -> list[str]:
        """The case fields two cases of one id differ in (compared as decoded values), among
        those a pair must share (``must_be_equal``; their wire names): empty when they pair."""
        return [attr for attr in self.must_be_equal if getattr(a, attr) != getattr(b, attr)]

    def check_pair(self, a: Any, b: Any, line: int) -> tuple[list[Check], list[Check]]:
        """Every rubric's outcome for a pair (run A's case ``a``, run B's ``b``, which pair:
        see ``mismatch``), in rubric order, in both orders: A's response first, then B's.
        Both orders share their plan and outcome: a pair is judged in both or neither (one
        order over budget puts the other over too, listed once). Each order counts as a
        check; run A's metadata decides `when` and its labels are the pair's."""
        key = (True, a.messages is not None, a.context is not None, a.policy is not None,
               a.tool_events is not None or b.tool_events is not None,
               a.metadata is not None or b.metadata is not None,
               a.expected is not None or b.expected is not None)
        plans = self._plans.get(key) or self._plan(key)
        metadata = a.metadata
        if self._when_keys and metadata:
            self._note_when_keys(metadata)
        encode = self.encode
        first, second = (escape_line_breaks(encode(a.output)), escape_line_breaks(encode(b.output)))
        ab = PairOrder(a.id, a.input, a.messages, a.context, a.policy, a.output, b.output)
        ba = ab._replace(response_1=b.output, response_2=a.output)
        fields_ab = {"response_1": first, "response_2": second}
        fields_ba = {"response_1": second, "response_2": first}
        counted_ab: dict[tuple[bytes, bool], int] = {}
        counted_ba: dict[tuple[bytes, bool], int] = {}
        out_ab, out_ba = [], []
        usual, other = self._usual, self._other
        for plan in plans:
            rubric = plan.rubric
            if plan.skipped is not None:
                one = two = plan.skipped
            elif rubric.when and (reason := rubric.when_reason(metadata)) is not None:
                one = two = Check(plan, reason, None, None, None, None)
            else:
                one = self._judge(ab, line, plan, fields_ab, counted_ab)
                for attr, value in fields_ab.items():  # the shared fields, encoded once
                    fields_ba.setdefault(attr, value)
                if one.reason is None:
                    two = self._judge(ba, line, plan, fields_ba, counted_ba)
                    if two.reason is not None:  # never seen: both orders count the same
                        one = Check(plan, two.reason, None, one.tokens, None, None)
                else:
                    two = Check(plan, one.reason, None, one.tokens, None, None)
            if one.reason is plan.reason:
                usual[plan.slot] += 2
            else:
                other[plan.slot, one.reason] += 2  # type: ignore[index]
            out_ab.append(one)
            out_ba.append(two)
        if a.expected:
            self._note_labels(a.expected, out_ab)
        return out_ab, out_ba

    def _note_labels(self, expected: dict[str, Any], checks: list[Check]) -> None:
        tally, index = self._tally, self._rubric_index
        outside = tally.labels_outside
        for rubric_id in expected:
            i = index.get(rubric_id)
            if i is None:
                if rubric_id in outside:  # counted already: no cap to apply
                    outside[rubric_id] += 1
                else:
                    tally.label_outside(rubric_id)
            elif checks[i].reason not in (None, OVER_BUDGET, PAIRWISE):
                # (a pairwise rubric's label on a case of one run is the pair's, not lost)
                tally.labels_not_applicable += 1

    def _judge(self, case: Any, line: int, plan: Plan, fields: dict[str, bytes],
               counted: dict[tuple[bytes, bool], int]) -> Check:
        """A judge rubric's state, and whether it fits the budget. ``fields`` and ``counted``
        hold the case's shown fields encoded, and their segments' token counts (by key and
        whether the field is the state's last: ``tokens.segment``), for the next rubrics."""
        parts: list[bytes]
        state: bytes | None
        if plan.alone is not None:
            # Its fields are its own: the state is a dict of them encoded in one call, the
            # same bytes as the join below (msgspec writes an object's keys in order, with
            # no space; the names are ASCII, so escaping the whole is escaping each value),
            # ~3 us a case less than an encode and an escape a field and the join's copy.
            state = escape_line_breaks(self.encode({name: getattr(case, attr)
                                                    for name, attr in plan.alone}))
            size = len(state)
            parts = [state]
        else:
            parts = []
            for key, attr in plan.keys:
                value = fields.get(attr)
                if value is None:
                    # Escaped once per field and case (a quick `in` test when there is
                    # nothing to escape): the state's bytes, and so its hash, are the ones
                    # written.
                    value = fields[attr] = escape_line_breaks(self.encode(getattr(case, attr)))
                parts += (key, value)
            parts.append(b"}" if parts else b"{}")  # a rubric may show nothing this case has
            if self.keep_states:
                state = b"".join(parts)
                size = len(state)
            else:  # sizes only (stats): the state is joined only if it must be counted
                state, size = None, sum(map(len, parts))
        if not self.keep_states:
            state = None
        budget = self.budget
        longest = budget.longest_question_bytes
        sizes = Sizes(size, longest, size + longest)
        if size <= self._byte_room:
            # Most states: they fit in bytes, so in tokens; nothing is counted.
            return Check(plan, None, state, Tokens(budget.tokenizer, budget.max_tokens, sizes,
                                                   None, budget.reserved), None, None)
        if budget.exact and plan.alone is None:
            # Every state is counted (stats, --exact-tokens), to the end: a state's count is
            # the sum of its fields' segments', and each segment is counted once a case
            # however many rubrics show it (stats' built-in set: ~5 states a case).
            n, exact, last = 0, True, len(plan.keys) - 1
            for i, (key, attr) in enumerate(plan.keys):
                c = counted.get((key, i == last))
                if c is None:
                    c = counted[key, i == last] = budget.segment_tokens(
                        tokens.segment(key, fields[attr], i == last))
                n += c
            if last < 0:
                n = budget.segment_tokens(b"{}")
        else:
            n, exact = budget.state_tokens(state or b"".join(parts), plan.shown,
                                           budget.limit())
        longest = budget.longest_question
        total = n + longest
        figures = Tokens(budget.tokenizer, budget.max_tokens, sizes,
                         Sizes(n, longest, total) if exact else None, budget.reserved)
        if total + budget.held <= budget.max_tokens:
            return Check(plan, None, state, figures, None, None)
        self._tally.over(OverBudget(line, case.id, plan.rubric.id, total + budget.held, exact))
        return Check(plan, OVER_BUDGET, state, figures, None, None)

    def question_tokens(self, rubric_id: str) -> int:
        """The exact token count of a judge rubric's system text: its question, preamble
        included, and the answer instruction."""
        return self.budget.question_tokens[self._judge_index[rubric_id]]

    def _plan(self, key: tuple[bool, ...]) -> list[Plan]:
        """The per-rubric plans for cases with this pattern of present fields (a pair's,
        when it starts with True: ``check_pair``)."""
        pair = len(key) == 7
        has = dict(zip(("conversation", "reference_material", "policy", "tool_events",
                        "metadata", "expected"), key[1:] if pair else key, strict=True))
        if pair:  # a pair's state names, and a run's own fields, which it never shows
            present = (*(n for n in PAIR_STATE_NAMES if has.get(n, True)),
                       *(n for n in OWN_FIELDS if has[n]))
            field_of = PAIR_FIELD_OF
        else:
            present, field_of = tuple(n for n in STATE_NAMES if has.get(n, True)), FIELD_OF
        pset = frozenset(present)
        hidden = [n for n in NEVER_SHOWN if has[n]]
        plans = []
        for rubric in self.rubrics.rubrics:
            shown = [n for n in rubric.shows if n in pset and n in field_of]
            missing = next((n for n in rubric.requires if n not in pset), None)
            if rubric.pairwise != pair:  # never this kind of check
                reason: str | None = NOT_PAIRWISE if pair else PAIRWISE
            else:
                reason = f"requires {missing}" if missing else None
            plan = Plan(
                rubric=rubric,
                reason=reason,
                present=pset,
                shown=shown,
                withheld=[n for n in present if n not in shown],
                hidden=hidden,
                keys=tuple(((b"{" if i == 0 else b",") + self.encode(n) + b":", field_of[n])
                           for i, n in enumerate(shown)),
                question=self._questions.get(rubric.id, msgspec.Raw(b"null")),
                skipped=None,
                slot=len(self._all_plans),
                alone=None)
            self._all_plans.append(plan)
            self._usual.append(0)
            if plan.reason is not None:
                object.__setattr__(plan, "skipped",
                                   Check(plan, plan.reason, None, None, None, None))
            plans.append(plan)
        # A state encoded in one call when no other judge rubric of this pattern shows one
        # of its fields; else its fields are encoded once for the case and joined.
        judged = [p for p in plans if p.reason is None and p.rubric.kind == "judge"]
        shown_by = Counter(name for p in judged for name in p.shown)
        for p in judged:
            if all(shown_by[name] == 1 for name in p.shown):
                object.__setattr__(p, "alone", tuple((n, FIELD_OF[n]) for n in p.shown))
        self._plans[key] = plans
        return plans

    def exposure(self, check: Check) -> Exposure:
        """The exposure record of a written check (with its token figures for a judge)."""
        plan = check.plan
        return Exposure(plan.shown, plan.withheld, plan.hidden, check.tokens)

    def _note_when_keys(self, metadata: dict[str, Any]) -> None:
        if len(self._tally.metadata_keys) < MAX_KEYS_SEEN:
            self._tally.metadata_keys.update(metadata)
        seen = self._tally.when_keys_seen
        for key, path in self._when_keys.items():
            if (path[0] in metadata) if len(path) == 1 else metadata_has(metadata, path):
                seen[key] += 1


def room_warning(rubrics: RubricSet, max_tokens: int,
                 max_output_tokens: int = tokens.DEFAULT_OUTPUT) -> str | None:
    """A warning when ``max_tokens`` leaves no room for any judge state beside the longest
    system text and the reserved tokens (counted exactly only when its bytes alone do not
    already fit)."""
    questions = [r.system for r in rubrics.rubrics if r.judged]
    budget = tokens.Budget(max_tokens, questions, output=max_output_tokens,
                           pairwise=any(r.pairwise for r in rubrics.rubrics))
    if not questions or budget.longest_question_bytes + budget.held < max_tokens:
        return None
    longest = budget.longest_question
    if longest + budget.held < max_tokens:
        return None
    return (f"--max-tokens {max_tokens:,} leaves no room for a judge state: the longest question "
            f"and the answer instruction take {longest:,} tokens, the request's framing "
            f"{budget.reserved.framing:,} and the answer's bound (--max-output-tokens) "
            f"{max_output_tokens:,}, so no judge check can be written; raise --max-tokens.")
