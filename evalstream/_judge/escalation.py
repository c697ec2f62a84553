"""The escalation rule of a jury (issue 29; "Trust or Escalate", Jung et al., ICLR 2025): a
first judge is asked every state, and a second, stronger judge only where the first is unsure;
the second's answer then decides.

``rule = "escalate"`` in a jury file with exactly two ``[[judge]]`` tables (the first, then
the stronger) and ``threshold`` (0 to 1, default ``jury.DEFAULT_THRESHOLD``; the file is read
by ``jury.parse``). The first judge is
asked for its tokens' log probabilities where its provider gives them (``Provider.logprobs``);
it is unsure of a state (``unsure``) when:

- none of its votes is scored (it failed, or refused): the second judge is the only answer;
- its scored samples differ (``samples`` above 1): they split;
- with one sample, the probability it gave its status is below ``threshold``, or it gave none
  (a provider without log probabilities, an answer whose tokens could not be read): what is
  not known to be sure is escalated, never trusted.

Pass 1 asks the first judge every state, waits for its answers, then asks the second judge the
states the first is unsure of (``live.Asker.run``'s stages); pass 2 reads the same store, so a
re-run asks nothing twice and writes the same bytes. The verdict's votes are every vote cast;
its decision is the majority of the deciding judge's votes (the second's where it was asked).
The report's ``jury.escalation`` says how many states were escalated, what the stronger judge
cost, and what asking it every state would have cost at the same rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from msgspec import Struct

from evalstream._judge.answer import Parsed, allowed

if TYPE_CHECKING:
    from evalstream._judge.jury import Jury
    from evalstream._judge.request import JudgeConfig
    from evalstream._judge.store import Store
    from evalstream._verdicts.records import Vote

STAGES = 2  # the first judge, then the second where the first is unsure


class Escalation(Struct):
    """The escalation part of a jury's report: the threshold, the states decided, those
    escalated to the second judge, its cost this run, and the cost of asking it every state
    at its cost per state here (null without prices, or when none was escalated)."""

    threshold: float
    states: int
    escalated: int
    second_cost_usd: float | None
    all_second_cost_usd: float | None


def unsure(first: Sequence[Parsed | None], threshold: float) -> bool:
    """Whether the first judge's answers on a state (None: a vote without an answer) leave it
    unsure: no scored vote, scored samples that differ, or one sample whose status had a
    probability below ``threshold`` (or none read)."""
    scored = [p for p in first if p is not None and p.cause is None]
    if not scored:
        return True
    if len({p.status for p in scored}) > 1:
        return True
    if len(first) > 1:
        return False  # samples that agree
    confidence = scored[0].confidence
    if confidence is None:
        return True
    return {"pass": confidence.pass_, "fail": confidence.fail,
            "na": confidence.na}[scored[0].status] < threshold


def answers(store: Store, config: JudgeConfig, keys: Sequence[str]) -> list[Parsed | None]:
    """The first judge's answers on a state (``config``: its config of the state), read
    from the store (None: not stored) as its votes read them: an ``na`` where the rubric does
    not allow it is unscored, the confidence over the statuses it allows (``allowed``)."""
    out: list[Parsed | None] = []
    for key in keys:
        stored = store.get(key)
        out.append(None if stored is None else allowed(config.parse(stored.body),
                                                        config.allows_na))
    return out


class EscalationTally:
    """The states a run's escalation decided, those escalated, and the second judge's tokens
    on them (pass 2 counts them from the votes, stored before or now)."""

    def __init__(self) -> None:
        self.states = self.escalated = 0
        self.tokens = [0, 0]

    def add(self, jury: Jury, second: Sequence[Vote] | None) -> None:
        """One state's verdict: ``second``, the second judge's votes (None: not escalated)."""
        self.states += 1
        if second is not None:
            self.escalated += 1
            for vote in second:
                if vote.usage is not None:
                    self.tokens[0] += vote.usage.input_tokens
                    self.tokens[1] += vote.usage.output_tokens

    def report(self, jury: Jury) -> Escalation | None:
        """The report's ``jury.escalation`` (None: not an escalating jury)."""
        if jury.threshold is None:
            return None
        second = jury.jurors[1]
        cost = second.cost(*self.tokens) if second.priced else None
        every = None if cost is None or not self.escalated else \
            round(cost / self.escalated * self.states, 6)
        return Escalation(jury.threshold, self.states, self.escalated,
                          None if cost is None else round(cost, 6), every)
