"""A panel's votes (issue 26): the requests a judge state needs from each juror, grouped as
they are sent, and the tallies a run reports per juror.

Every vote is one store entry: juror j's sample s of a state is the answer stored under
``request.sample_key(key, s)``, where ``key`` is the store key of the juror's request for the
state (``request.build``: its provider, URL and body). Samples a state still needs from one
juror are asked in one request where the provider can (``Provider.samples_body``: OpenAI's
``n``, the prompt billed once), else one request each; the answer of a request for several
samples is split into the samples' own answers (``Provider.split_samples``) and each stored
under its key, all in one store transaction (one paid answer: all or none survive a kill).
So a vote is never paid for twice, however it was asked, and a run resumed
after ``kill -9`` asks only for the votes not stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from evalstream._judge.escalation import Escalation
from evalstream._judge.inputs import JudgeState
from evalstream._judge.jury import Juror, Jury
from evalstream._judge.report import JurorReport, JuryReport
from evalstream._judge.request import Request, build, sample_key
from evalstream._verdicts.cost import price
from evalstream._verdicts.records import VOTE_STATUSES as STATUSES
from evalstream._verdicts.records import JudgeVerdict, TokenUsage


class Ask(NamedTuple):
    """One request to send: the juror's place in the jury, the body sent, the store keys its
    answer fills (one per sample it asks for, in sample order), and the body of one sample
    alone (to ask a sample again alone, when a server answered fewer than asked)."""

    juror: int
    body: bytes
    keys: tuple[str, ...]
    single: bytes


def requests(jury: Jury, state: JudgeState) -> Iterator[tuple[int, Juror, Request,
                                                             tuple[str, ...]]]:
    """For each juror: its place, itself, its request for the state (asked as the state's
    rubric allows: without ``na`` where it does not, ``JudgeConfig.of``) and the store keys of
    its samples (the first is the request's own key)."""
    for j, juror in enumerate(jury.jurors):
        req = build(juror.config.of(state), state.question, state.state)
        yield j, juror, req, tuple(sample_key(req.key, s) for s in range(juror.samples))


def grouped(jury: Jury, j: int, single: bytes, keys: tuple[str, ...]) -> list[Ask]:
    """The requests that ask juror ``j`` for the samples of ``keys``: one, where the provider
    asks for several samples at once, else one a sample."""
    if len(keys) > 1:
        config = jury.jurors[j].config
        body = config.api.samples_body(config, single, len(keys))
        if body is not None:
            return [Ask(j, body, keys, single)]
    return [Ask(j, single, (key,), single) for key in keys]


@dataclass
class JurorTally:
    """What one juror did in a run: requests sent and answered (one request may carry several
    samples), votes stored, failed (no answer) and reused, tokens and cost of this run."""

    sent: int = 0
    answered: int = 0
    votes_stored: int = 0
    votes_failed: int = 0
    votes_reused: int = 0
    usage: list[int] = field(default_factory=lambda: [0, 0, 0])  # input, output, reasoning
    cost: float = 0.0


class PanelTally:
    """What a panel's verdicts held, per juror and in all, as pass 2 writes them."""

    def __init__(self, jury: Jury) -> None:
        self.jury = jury
        self.place = {juror.name: j for j, juror in enumerate(jury.jurors)}
        self.votes = [dict.fromkeys(STATUSES, 0) for _ in jury.jurors]
        self.split = self.unstable = self.decided = 0
        self.agreement = 0.0

    def add(self, v: JudgeVerdict) -> None:
        """Count one panel verdict."""
        assert v.votes is not None and v.panel is not None
        samples: dict[str, set[str]] = {}
        for vote in v.votes:
            self.votes[self.place[vote.judge]][vote.status] += 1
            if vote.status != "unscored":
                samples.setdefault(vote.judge, set()).add(vote.status)
        p = v.panel
        self.split += len(set().union(*samples.values())) > 1  # scored votes that differ
        self.unstable += any(len(seen) > 1 for seen in samples.values())
        if v.status != "unscored":
            self.decided += 1
            self.agreement += p.agreed / p.scored

    def report(self, tallies: list[JurorTally],
               escalation: Escalation | None = None) -> JuryReport:
        """The jury's part of the run report (``tallies``: pass 1's, per juror)."""
        jurors = []
        for juror, votes, t in zip(self.jury.jurors, self.votes, tallies, strict=True):
            prices = price(juror.price_in, juror.price_out)
            jurors.append(JurorReport(
                name=juror.name, model=juror.config.model, provider=juror.config.provider,
                samples=juror.samples, sent=t.sent, answered=t.answered,
                votes_stored=t.votes_stored, votes_failed=t.votes_failed,
                votes_reused=t.votes_reused, votes=votes,
                usage=TokenUsage(t.usage[0], t.usage[1], t.usage[2] or None), prices=prices,
                cost_usd=round(t.cost, 6) if prices is not None else None))
        return JuryReport(
            rule=self.jury.rule, file=self.jury.path, votes_per_state=self.jury.votes,
            jurors=jurors, split=self.split, unstable=self.unstable,
            consistency=round(self.agreement / self.decided, 6) if self.decided else None,
            escalation=escalation)
