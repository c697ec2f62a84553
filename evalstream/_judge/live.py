"""The live judge run: two streaming passes over ``build``'s output.

Pass 1 sends a request for every judge state whose answer is not stored, at most
``max_connections`` in flight, and commits each answer to the store as it arrives. Pass 2
reads the input again and writes, in input order, each judge state's verdict from the
store, each exact verdict unchanged, each bad line as a reject. Memory is flat in the number
of states (the requests in flight, one chunk of lines, and SQLite's page cache), and the
verdicts are a function of the stored answers: a run resumed after ``kill -9`` writes the
same bytes as one that was never stopped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import msgspec

from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES, HeldInput
from evalstream._files.outputs import AtomicOutput, escape_line_breaks
from evalstream._files.sniff import HEAD_BYTES, check_head
from evalstream._files.transaction import Target, Transaction
from evalstream._judge import inputs, pairs, tokens, verdict
from evalstream._judge.answer import Parsed
from evalstream._judge.escalation import STAGES, EscalationTally, answers, unsure
from evalstream._judge.jury import Jury, single
from evalstream._judge.limits import Concurrency, TokenBucket
from evalstream._judge.logprobs import ConfidenceTally
from evalstream._judge.providers.base import Signer
from evalstream._judge.report import (
    DEFAULT_MAX_UNSCORED_RATE,
    MAX_NOT_JUDGED_LISTED,
    Counts,
    Histogram,
    JudgeReport,
    NotJudged,
    Requests,
    too_unscored,
)
from evalstream._judge.report import encode as encode_report
from evalstream._judge.request import JudgeConfig, Request, build
from evalstream._judge.store import ANSWERED, HELD, LEASE, Failure, Store, Stored
from evalstream._judge.transport import (
    DEFAULT_MAX_WAIT,
    Reply,
    Transport,
    answer_bytes,
    key_from_environment,
)
from evalstream._judge.votes import Ask, JurorTally, PanelTally, grouped, requests
from evalstream._verdicts.cost import price
from evalstream._verdicts.records import VOTE_STATUSES, JudgeVerdict, TokenUsage, Vote
from evalstream._version import __version__
from evalstream.errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_REJECTS, UsageError

DEFAULT_MAX_CONNECTIONS = 16
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_TIMEOUT = 120.0
STORE_SUFFIX = ".judge.sqlite"
WAIT_POLL = 0.1  # seconds between looks at the requests another run on the store is sending


@dataclass
class Options:
    """Everything a judge run needs (``evalstream.judge`` fills it)."""

    input: str
    output: str | None
    config: JudgeConfig
    rejects: str | None = None
    report: str | None = None
    force: bool = False  # replace targets that hold something else
    store: str | None = None  # the answer store; default beside the output
    api_key_env: str | None = None  # default OPENAI_API_KEY / ANTHROPIC_API_KEY
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    timeout: float = DEFAULT_TIMEOUT
    max_wait: float = DEFAULT_MAX_WAIT  # seconds of Retry-After waits a request may take
    rpm: float | None = None
    tpm: float | None = None
    max_cost: float | None = None
    max_requests: int | None = None
    price_in: float | None = None
    price_out: float | None = None
    retry_unscored: bool = False
    max_unscored_rate: float | None = DEFAULT_MAX_UNSCORED_RATE
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    # the encoding of --dry-run, --tpm and --max-cost counts; None: the model family's
    tokenizer: str | None = None
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    # A jury (--jury FILE: its jurors, each with its config, samples, prices and key's
    # variable; `config` is its first juror's); None: `config` alone, asked `samples` times.
    jury: Jury | None = None
    samples: int = 1
    # --confidence (issue 29): a single judge asks for log probabilities (``config``); a
    # panel's verdicts carry the share of their votes.
    confidence: bool = False


def jury_of(opts: Options) -> Jury:
    """The run's jury: --jury's, or the jury of one that --model (and --samples) make."""
    if opts.jury is not None:
        return opts.jury
    return single(opts.config, opts.samples, opts.price_in, opts.price_out, opts.api_key_env)


@dataclass
class Progress:
    """What the progress bar shows; updated as the run goes."""

    lines: int = 0  # input lines read in pass 1
    states: int = 0  # judge states among them
    needed: int = 0
    sent: int = 0
    done: int = 0  # requests finished (answered or failed)
    unscored: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    started: float = field(default_factory=time.monotonic)
    votes: dict[str, int] = field(default_factory=dict)  # a panel's votes stored, by juror


ProgressHook = Callable[[Progress], None]


def check(opts: Options) -> Transaction:
    """Raise UsageError for options that cannot work together; return the run's targets,
    checked (``outputs``)."""
    if opts.output is None:
        raise UsageError("give an output file for the verdicts.")
    jury = jury_of(opts)
    if opts.max_cost is not None and not jury.priced:
        if opts.jury is not None:
            raise UsageError(f"--max-cost needs every juror's prices: give `price_in` and "
                             f"`price_out` to each [[judge]] of {opts.jury.path} (USD per "
                             "million tokens; evalstream keeps no price table).")
        raise UsageError("--max-cost needs --price-in and --price-out (USD per million tokens): "
                         "evalstream keeps no price table, because prices change.")
    for name, value in (("--max-connections", opts.max_connections),
                        ("--max-attempts", opts.max_attempts)):
        if value < 1:
            raise UsageError(f"{name} must be at least 1.")
    for name, number in (("--timeout", opts.timeout), ("--max-wait", opts.max_wait),
                         ("--rpm", opts.rpm), ("--tpm", opts.tpm),
                         ("--max-cost", opts.max_cost), ("--price-in", opts.price_in),
                         ("--price-out", opts.price_out)):
        if number is not None and not number > 0:
            raise UsageError(f"{name} must be more than 0.")
    if opts.max_requests is not None and opts.max_requests < 0:
        raise UsageError("--max-requests must be 0 or more.")
    if opts.output == "-" and not opts.store:
        raise UsageError("with the verdicts on stdout, give --store FILE for the answer store "
                         "(it is kept beside the output otherwise).")
    return outputs(opts).check()


def outputs(opts: Options) -> Transaction:
    """The run's targets: the verdicts, the rejects and the report beside them by default,
    and the answer store (--store, else beside the output: verdicts.jsonl ->
    verdicts.judge.sqlite), which is read and written: it may be neither an input nor
    another target (SQLite opens it, not the transaction)."""
    return Transaction(
        [("input", opts.input)],
        [Target("output", opts.output, "verdicts"),
         # Written only when a line is rejected, as build's (unless named: --rejects).
         Target("rejects", opts.rejects, "rejects", beside=".rejects.jsonl", optional=True),
         Target("report", opts.report, "json", beside=".report.json"),
         Target("store", opts.store or None, beside=STORE_SUFFIX)], opts.force)


def store_path(opts: Options) -> str:
    """The answer store: --store, else beside the output (verdicts.jsonl ->
    verdicts.judge.sqlite)."""
    path = outputs(opts).path("store")
    assert path is not None
    return path


def api_key(opts: Options) -> str | None:
    """The API key from the environment; None for a server that needs none. Raises UsageError
    when the provider's public endpoint would get no key."""
    return key_from_environment(opts.config, opts.api_key_env, opts.environ)


def api_keys(opts: Options) -> list[str | None]:
    """Each juror's API key from the environment (its `api_key_env`, else its provider's
    variable), as ``api_key`` reads one."""
    return [key_from_environment(j.config, j.api_key_env, opts.environ)
            for j in jury_of(opts).jurors]


def held(opts: Options) -> HeldInput:
    """The input, held open for every reading of the run, after the wrong-file check (stdin
    and other streams spooled to a temporary file that is gone as soon as it is opened)."""
    source = HeldInput(opts.input)
    try:
        check_head(source.head(HEAD_BYTES), opts.input, "judge states",
                   JUDGE_USAGE.format(input=opts.input))
    except BaseException:
        source.close()
        raise
    return source


# -- pass 1: ask ---------------------------------------------------------------------------------
class Asker:
    """Pass 1: reads the judge states and sends what is not stored, within the limits: for a
    jury, every juror's every sample (``votes``), each vote a store entry of its own."""

    def __init__(self, opts: Options, store: Store, keys: list[str | None],
                 hook: ProgressHook | None,
                 signers: list[Signer | None] | None = None) -> None:
        self.opts = opts
        self.jury = jury_of(opts)
        self.signers = signers or [None] * len(self.jury.jurors)
        self.config = opts.config
        self.store = store
        self.keys = keys
        self.hook = hook
        self.progress = Progress()
        self.requests = Requests()
        self.histogram = Histogram()
        self.spent = 0.0
        self.reserved = 0.0
        self.usage = [0, 0, 0]  # input, output, reasoning (of output) tokens
        self.stopped_by: str | None = None
        self.fatal: str | None = None
        self.refused: str | None = None  # every attempt refused alike (transport.refused)
        self.unreachable = False  # ... by no connection made at all (transport.unreachable)
        # an error in a request's task (the store failed; a bug): stop paying for answers
        self.broken: Exception | None = None
        self.usage_unknown = 0  # answers without usable token counts: charged their worst case
        self.oversized = 0  # answers longer than the transport reads: stored cut, unscored
        self.concurrency = Concurrency(opts.max_connections)
        self.in_flight: set[str] = set()  # keys sent and not yet finished
        # Votes another run on the store was sending when this one came to them.
        self.waiting: dict[str, tuple[inputs.JudgeState, Ask]] = {}
        # With --retry-unscored an answer stored before this run is the one to replace.
        self.answered_since = time.time() if opts.retry_unscored else 0.0
        counting = bool(opts.tpm or opts.max_cost)
        self.counters = [tokens.counter(j.config.provider, j.config.model, opts.tokenizer)
                         if counting else None for j in self.jury.jurors]
        self.counter = self.counters[0]
        self.tallies = [JurorTally() for _ in self.jury.jurors]  # per juror, for the report

    def _worst_cost(self, j: int, input_tokens: int, samples: int = 1) -> float:
        juror = self.jury.jurors[j]
        return juror.cost(input_tokens, juror.config.max_output_tokens * samples)

    def needs(self, j: int, key: str, config: JudgeConfig) -> bool:
        """Whether juror ``j``'s vote stored under ``key`` must be asked (counting it as
        needed or reused); ``config``: the juror's config of the state (its form of answer)."""
        if key in self.in_flight or key in self.waiting:
            return False  # a duplicate of a request on its way
        stored = self.store.get(key) if self.opts.retry_unscored else None
        if stored is not None and config.parse(stored.body).cause:
            if self.store.asked(key):
                return False  # asked again already in this run
            self.requests.needed += 1
            self.requests.retried_unscored += 1
            return True
        if stored is not None or self.store.has(key):
            self.requests.reused += 1
            self.tallies[j].votes_reused += 1
            return False
        if self.store.asked(key):
            return False  # a duplicate of a request this run already sent
        self.requests.needed += 1
        return True

    async def run(self, source: HeldInput) -> None:
        rpm = TokenBucket(self.opts.rpm) if self.opts.rpm else None
        tpm = TokenBucket(self.opts.tpm) if self.opts.tpm else None
        # One transport a juror (its URL, headers, key), sharing the run's limits.
        transports = [Transport(juror.config, key, self.concurrency, timeout=self.opts.timeout,
                                max_attempts=self.opts.max_attempts, rpm=rpm, tpm=tpm,
                                max_wait=self.opts.max_wait, signer=signer)
                      for juror, key, signer in zip(self.jury.jurors, self.keys, self.signers,
                                                    strict=True)]
        tasks: set[asyncio.Task[None]] = set()
        ticker = asyncio.create_task(self._tick()) if self.hook else None
        renewer = asyncio.create_task(self._renew())
        try:
            async with AsyncExitStack() as stack:
                for transport in transports:
                    await stack.enter_async_context(transport)
                # Escalation (issue 29) asks in two stages: the first judge, then, once its
                # answers are stored, the second where the first is unsure.
                for stage in range(STAGES if self.jury.threshold is not None else 1):
                    for i, (state, ask) in enumerate(self._asks(source, stage)):
                        if i % 64 == 0:
                            # Let answers in flight be read while stored states stream past.
                            await asyncio.sleep(0)
                        if self.broken is not None:
                            break
                        await self._offer(state, ask, transports, tasks)
                    while self.waiting and self.broken is None:
                        # Wait for the answers of the other runs' requests; one whose claim
                        # ended without an answer (that run got none, or died) is offered
                        # again here.
                        await asyncio.sleep(WAIT_POLL)
                        for key, (state, ask) in list(self.waiting.items()):
                            del self.waiting[key]
                            await self._offer(state, ask, transports, tasks)
                    if tasks:
                        await asyncio.gather(*tasks)
                    if self.broken is not None or self.stopped_by is not None:
                        break
            if self.broken is not None:
                raise self.broken
        finally:
            for task in tasks:
                task.cancel()
            if ticker is not None:
                ticker.cancel()
            renewer.cancel()
            r = self.requests
            r.attempts = sum(t.tally.attempts for t in transports)
            r.retries = sum(t.tally.retries for t in transports)
            retried: Counter[str] = Counter()
            for t in transports:
                retried.update(t.tally.retried)
            r.retried = dict(sorted(retried.items()))
            r.rate_limited = sum(t.tally.rate_limited for t in transports)
            r.paced_seconds = round(sum(t.pacer.waited for t in transports), 3)
            self.refused, self.unreachable = self._refused(transports)
            r.max_in_flight = self.concurrency.most_held
            r.lowest_concurrency = self.concurrency.lowest
            if self.hook:
                self.hook(self.progress)

    def _refused(self, transports: list[Transport]) -> tuple[str | None, bool]:
        """The refusal every attempt of a juror met, naming the juror in a jury, and whether
        that juror's server was reached at all (``transport.unreachable``)."""
        for juror, transport in zip(self.jury.jurors, transports, strict=True):
            if transport.refused is not None:
                said = transport.refused if self.opts.jury is None else \
                    f"juror `{juror.name}`: {transport.refused}"
                return said, transport.unreachable
        return None, False

    async def _offer(self, state: inputs.JudgeState, ask: Ask, transports: list[Transport],
                     tasks: set[asyncio.Task[None]]) -> None:
        """Send a needed request, within the limits, for the votes no other run on the store
        is sending (those are waited for) or has answered since ``needs`` looked."""
        if self.stopped_by or self.fatal or any(t.refused for t in transports):
            return  # read on, to count what was needed
        if self.opts.max_requests is not None and self.requests.sent >= self.opts.max_requests:
            self.stopped_by = "max-requests"
            return
        claimed = []
        for key in ask.keys:
            claim = self.store.claim(key, self.answered_since)
            if claim == HELD:
                self.waiting[key] = (state, Ask(ask.juror, ask.single, (key,), ask.single))
            elif claim == ANSWERED:
                self.requests.from_other_runs += 1
            else:
                claimed.append(key)
        if not claimed:
            return
        if len(claimed) < len(ask.keys):  # ask for the samples claimed, as they are sent
            ask, *rest = grouped(self.jury, ask.juror, ask.single, tuple(claimed))
            for later in rest:
                for key in later.keys:
                    self.store.release(key)
                    self.waiting[key] = (state, later)
        j = ask.juror
        counter = self.counters[j]
        estimate = 0
        config = self.jury.jurors[j].config.of(state)
        if counter is not None:
            estimate = tokens.request_tokens(config.system(state.question), state.state,
                                             counter.encoding, state.pair is not None)
        worst = 0.0
        if self.opts.max_cost is not None:
            worst = self._worst_cost(j, estimate, len(ask.keys))
            if self.spent + self.reserved + worst > self.opts.max_cost:
                self.stopped_by = "max-cost"
                for key in ask.keys:
                    self.store.release(key)
                return
            self.reserved += worst
        await self.concurrency.acquire()
        if self.fatal or any(t.refused for t in transports):
            self.concurrency.release()
            self.reserved -= worst
            for key in ask.keys:
                self.store.release(key)
            return
        for key in ask.keys:
            if self.opts.retry_unscored:
                self.store.mark_asked(key)  # its new answer may be unscored too
            self.in_flight.add(key)
        self.requests.sent += 1
        self.tallies[j].sent += 1
        self.progress.sent += 1
        task = asyncio.create_task(self._ask(ask, estimate, worst, transports[j], config))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _renew(self) -> None:
        """Keep this run's claims while it lives (a dead run's end with their lease)."""
        while True:
            await asyncio.sleep(LEASE / 4)
            try:
                self.store.renew()
            except Exception as exc:  # the store failed: stop paying for answers
                if self.broken is None:
                    self.broken = exc
                return

    def _asks(self, source: HeldInput,
              stage: int = 0) -> Iterator[tuple[inputs.JudgeState, Ask]]:
        """Each judge state's requests: for each juror, the samples not stored, grouped as
        they are sent (one request where the provider asks for several samples at once).
        Escalation's stage 0 asks the first judge, stage 1 the second where the first's
        stored answers leave it unsure."""
        reader = inputs.Reader(self.opts.max_line_bytes)
        threshold = self.jury.threshold
        for item in pairs.Orders().items(reader.read_held(source)):
            if stage == 0:
                self.progress.lines = reader.counts.lines
            for state in item if isinstance(item, pairs.Pair) else (item,):
                if isinstance(state, inputs.JudgeState):
                    if state.pair is not None and self.jury.panel:
                        raise UsageError(no_pairwise_panel(self.opts, state))
                    self.progress.states += stage == 0
                    first: tuple[str, ...] = ()
                    for j, juror, req, keys in requests(self.jury, state):
                        if j == 0:
                            first = keys
                        if threshold is not None and (j != stage or j == 1 and not unsure(
                                answers(self.store, self.jury.jurors[0].config.of(state),
                                        first), threshold)):
                            continue
                        config = juror.config.of(state)
                        needed = tuple(key for key in keys if self.needs(j, key, config))
                        for ask in grouped(self.jury, j, req.body, needed):
                            yield state, ask

    async def _ask(self, ask: Ask, estimate: int, worst: float, transport: Transport,
                   config: JudgeConfig) -> None:
        samples = len(ask.keys)
        output = self.jury.jurors[ask.juror].config.max_output_tokens
        try:
            try:
                reply = await (transport.send(ask.body, estimate + output) if samples == 1
                               else transport.send(ask.body, estimate + output * samples,
                                                   samples))
            finally:
                self.concurrency.release()
            self._answered(ask.juror, reply)
            if samples == 1 or reply.body is None:
                for key in ask.keys:
                    self._record(ask.juror, key, reply, estimate, config)
            else:
                # One request for several samples: each sample's answer stored under its key;
                # those a server did not give (it ignores `n`) asked alone, now.
                bodies = transport.config.api.split_samples(reply.body)[:samples]
                # One paid answer, one transaction: stored one by one, a kill -9 between two
                # samples kept the first, and the next run asked the others again in a request
                # of its own (paid twice, and other answers than a run never stopped got).
                with self.store.transaction():
                    for key, body in zip(ask.keys, bodies, strict=False):
                        self._record(ask.juror, key, reply._replace(body=body), estimate,
                                     config)
                for key in ask.keys[len(bodies):]:
                    if self.fatal or transport.refused or self.broken:
                        break  # the run stops: these votes stay unasked, their state unjudged
                    await self.concurrency.acquire()
                    try:
                        self.requests.sent += 1
                        self.tallies[ask.juror].sent += 1
                        again = await transport.send(ask.single, estimate + output)
                    finally:
                        self.concurrency.release()
                    self._answered(ask.juror, again)
                    self._record(ask.juror, key, again, estimate, config)
        except Exception as exc:
            # Never lost with its task (asyncio would only log it at exit, and the state would
            # get no verdict): the first error stops sending, and pass 1 raises it once the
            # requests in flight are stored, however early or late its task ended.
            if self.broken is None:
                self.broken = exc
        finally:
            if self.opts.max_cost is not None:
                self.reserved -= worst
            for key in ask.keys:
                self.in_flight.discard(key)

    def _answered(self, j: int, reply: Reply) -> None:
        """Count a request that ended, answered or not (one request may hold several votes)."""
        self.progress.done += 1
        if reply.body is None:
            self.requests.failed += 1
            return
        self.requests.answered += 1
        self.tallies[j].answered += 1
        self.histogram.add(reply.latency_ms)

    def _record(self, j: int, key: str, reply: Reply, estimate: int,
                config: JudgeConfig) -> None:
        """Store (or note the failure of) juror ``j``'s answer for the vote under ``key``
        (``config``: the juror's config of the state, whose form the answer is read in)."""
        juror, tally = self.jury.jurors[j], self.tallies[j]
        if reply.body is None:
            assert reply.cause is not None and reply.detail is not None
            tally.votes_failed += 1
            self.progress.unscored += 1
            self.store.fail(key, reply.cause, reply.detail)
            if reply.fatal and self.fatal is None:
                self.fatal = reply.detail if self.opts.jury is None else \
                    f"juror `{juror.name}`: {reply.detail}"
            return
        if not reply.whole:
            self.oversized += 1
        parsed = config.parse(reply.body)
        usage = parsed.usage
        self.store.put(key, juror.config.provider, juror.config.model, reply.body,
                       reply.request_id or parsed.response_id,
                       usage.input_tokens if usage else None,
                       usage.output_tokens if usage else None, reply.latency_ms, reply.attempts)
        tally.votes_stored += 1
        if self.jury.panel:
            self.progress.votes[juror.name] = self.progress.votes.get(juror.name, 0) + 1
        if parsed.cause:
            self.progress.unscored += 1
        if usage is not None:
            for counts in (self.usage, tally.usage):
                counts[0] += usage.input_tokens
                counts[1] += usage.output_tokens
                counts[2] += usage.reasoning_tokens or 0
            self.progress.input_tokens += usage.input_tokens
            self.progress.output_tokens += usage.output_tokens
        if usage is None and juror.priced:
            # No usable counts (none, or impossible ones): never free against --max-cost.
            self.usage_unknown += 1
            cost = self._worst_cost(j, estimate)
        else:
            cost = 0.0 if usage is None else juror.cost(usage.input_tokens, usage.output_tokens)
        self.spent += cost
        tally.cost += cost
        self.progress.cost += cost

    async def _tick(self) -> None:
        assert self.hook is not None
        while True:
            self.hook(self.progress)
            await asyncio.sleep(0.25)


def _ask_all(asker: Asker, source: HeldInput) -> None:
    """Run pass 1; a SIGTERM or SIGHUP cancels it cleanly and is then delivered again.

    A signal handler that raises (the CLI's) would otherwise raise inside whichever task is
    running, and asyncio keeps such an exception in the task instead of stopping the loop.
    Here the signal cancels the run (requests in flight end, answers stored stay), and once
    the loop is closed it is raised again for the handler the caller installed.
    """
    caught: list[int] = []
    signums = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
               if s is not None]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        previous = {s: signal.getsignal(s) for s in signums}
        installed = []

        def stop(signum: int) -> None:
            caught.append(signum)
            task.cancel()

        for signum in signums:
            try:
                loop.add_signal_handler(signum, stop, signum)
                installed.append(signum)
            except (ValueError, RuntimeError, NotImplementedError):
                pass  # not the main thread: signals stay with whoever has them
        try:
            await asker.run(source)
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
                signal.signal(signum, previous[signum])

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        if not caught:
            raise
    if caught:
        signal.raise_signal(caught[0])
        raise KeyboardInterrupt  # the caller's handler did not stop the run: stop it here


# -- pass 2: write -------------------------------------------------------------------------------
class Writer:
    """Pass 2: the verdicts, exact verdicts and rejects, in input order, and the counts."""

    def __init__(self, opts: Options, store: Store) -> None:
        self.opts = opts
        self.config = opts.config
        self.store = store
        self.jury = jury_of(opts)
        self.info = self.jury.info() if self.jury.panel else self.config.info
        self.pair_info = self.config.pairwise.info
        self.panels = PanelTally(self.jury)  # a panel's votes, per juror
        self.escalations = EscalationTally()  # rule escalate (issue 29)
        self.counts = Counts()
        self.by_status: Counter[str] = Counter()
        self.by_cause: Counter[str] = Counter()
        self.rejected_by_kind: Counter[str] = Counter()
        self.not_judged: list[NotJudged] = []
        self.usage_all = [0, 0, 0]
        self.unstructured = 0  # answers read from text structured output did not shape
        self.confidence = ConfidenceTally(  # --confidence (issue 29)
            opts.confidence, self.config.provider, self.config.api.logprobs, self.jury.panel)
        self._encode = msgspec.json.Encoder().encode

    def answer(self, state: inputs.JudgeState) -> Stored | Failure | None:
        """What a judge state got: its stored answer, this run's failure, or None."""
        key = request_of(self.config, state).key
        return self.store.get(key) or self.store.failure(key)

    def pair_verdict(self, pair: pairs.Pair) -> bytes | None:
        """The one verdict line of a pairwise state's two orders, or None when either order
        was not judged."""
        first, second = self.answer(pair.first), self.answer(pair.second)
        if first is None or second is None:
            return None
        v = verdict.pair_answered(self.pair_info, self.config.pairwise, pair.first, pair.second,
                                  first, second)
        self.confidence.pair()
        return self._line(v)

    def verdict(self, state: inputs.JudgeState) -> bytes | None:
        """The verdict line for a judge state, or None when it was not judged."""
        if self.jury.panel:
            return self._panel(state)
        req = request_of(self.config, state)
        stored = self.store.get(req.key)
        if stored is not None:
            v, parsed = verdict.answered(self.info, self.config.api, stored, state.case_id,
                                         state.rubric_id, state.rubric_hash, state.state_hash,
                                         state.exposure, state.allows_na)
            self.unstructured += parsed.unstructured
            self.confidence.add(parsed)
        else:
            failure = self.store.failure(req.key)
            if failure is None:
                return None
            v = verdict.unanswered(self.info, failure, state.case_id, state.rubric_id,
                                   state.rubric_hash, state.state_hash, state.exposure)
        return self._line(v)

    def _line(self, v: JudgeVerdict) -> bytes:
        """The verdict's line; its status, cause and tokens (all of its answers': a pair's
        two orders, a panel's votes) counted in the run's."""
        if v.usage is not None:
            self.usage_all[0] += v.usage.input_tokens
            self.usage_all[1] += v.usage.output_tokens
            self.usage_all[2] += v.usage.reasoning_tokens or 0
        self.by_status[v.status] += 1
        if v.error is not None:
            self.by_cause[v.error.cause] += 1
        return escape_line_breaks(self._encode(v)) + b"\n"

    def _panel(self, state: inputs.JudgeState) -> bytes | None:
        """A panel's verdict from every juror's every sample, or None while one of them has
        neither an answer nor a failure of this run (not asked yet: a limit stopped pass 1)."""
        votes: list[Vote] = []
        read: list[Parsed | None] = []
        threshold, deciding = self.jury.threshold, None
        for j, juror, _, keys in requests(self.jury, state):
            if threshold is not None and j == 1:  # escalation: the second where unsure
                if not unsure(read, threshold):
                    break
                deciding = len(votes)
            for sample, key in enumerate(keys):
                stored = self.store.get(key)
                failure = self.store.failure(key) if stored is None else None
                if stored is None and failure is None:
                    return None
                vote, parsed = verdict.vote(juror.name, juror.config.model, sample,
                                            juror.config.api, stored, failure, state.allows_na)
                votes.append(vote)
                read.append(parsed)
        self.unstructured += sum(p.unstructured for p in read if p is not None)
        v = verdict.panel(self.info, self.jury.rule, votes, state.case_id, state.rubric_id,
                          state.rubric_hash, state.state_hash, state.exposure,
                          self.opts.confidence,
                          None if deciding is None else votes[deciding:])
        if threshold is not None:
            self.escalations.add(self.jury, votes[deciding:] if deciding is not None else None)
        self.confidence.panel(v.confidence)
        self.panels.add(v)
        return self._line(v)

    def write(self, source: HeldInput, out: AtomicOutput, rejects: AtomicOutput) -> None:
        c = self.counts
        pending: list[bytes] = []
        reader = inputs.Reader(self.opts.max_line_bytes)
        orders = pairs.Orders()
        for item in orders.items(reader.read_held(source)):
            if isinstance(item, inputs.JudgeState | pairs.Pair):
                states = item if isinstance(item, pairs.Pair) else (item,)
                c.judge_states += len(states)
                line = self.verdict(item) if isinstance(item, inputs.JudgeState) else \
                    self.pair_verdict(item)
                if line is None:
                    c.not_judged += len(states)
                    for state in states:
                        if len(self.not_judged) < MAX_NOT_JUDGED_LISTED:
                            self.not_judged.append(NotJudged(state.line, state.case_id,
                                                             state.rubric_id))
                else:
                    c.verdicts += 1
                    c.pairs += len(states) - 1
                    pending.append(line)
            elif isinstance(item, inputs.Exact):
                c.exact_verdicts += 1
                pending.append(escape_line_breaks(item.raw) + b"\n")
            else:
                rejects.write(escape_line_breaks(self._encode(item)) + b"\n")
            if len(pending) >= 256:
                out.write_all(pending)
                pending = []
        out.write_all(pending)
        lines = reader.counts
        c.lines, c.blank = lines.lines, lines.blank
        c.rejected = lines.rejected + orders.rejected  # a lone order is read, then rejected
        self.rejected_by_kind = lines.rejected_by_kind + orders.rejected_by_kind


def request_of(config: JudgeConfig, state: inputs.JudgeState) -> Request:
    """The request of a judge state: asked by ``config``, or its pairwise twin for a
    pairwise state's order."""
    return build(config.of(state), state.question, state.state)


def no_pairwise_panel(opts: Options, state: inputs.JudgeState) -> str:
    """Why a panel (a jury, or several samples) does not judge a pairwise state: the
    sentence of the UsageError that stops the run on the first one."""
    how = f"--jury {opts.jury.path}" if opts.jury is not None else f"--samples {opts.samples}"
    return (f"line {state.line}: case {state.case_id!r}, rubric {state.rubric_id!r} is a "
            f"pairwise state (build --pair-with), and {how} asks a panel: a pairwise verdict "
            "is already the decision of two orders, and a panel of such decisions (whose "
            "votes are a/b/tie, not pass/fail) is not supported yet. Judge pairwise states "
            "with one judge (--model, without --jury and --samples), or leave the pairwise "
            "rubric out of this run's states.")


# -- the run ---------------------------------------------------------------------------------------
JUDGE_USAGE = ("; judge reads build's output: run `evalstream build {input} states.jsonl` "
               "first and judge states.jsonl")


def run(opts: Options, hook: ProgressHook | None = None,
        targets: Transaction | None = None) -> JudgeReport:
    """Judge every state of ``opts.input``; write verdicts, rejects and the report.
    ``targets``: what ``check(opts)`` returned, when the caller checked already.

    Raises UsageError for bad options, when the server refuses the key, the model or the
    URL (HTTP 401, 403, 404), or when the first requests were all refused alike before any
    answer (the same status and message, or no connection made at all), or when a panel (a
    jury, or --samples) meets a pairwise state: nothing is written then, but every answer
    received is stored.
    """
    started = time.perf_counter()
    targets = targets if targets is not None else check(opts)
    assert opts.output is not None
    keys = api_keys(opts)
    signers = [juror.config.api.signer(juror.config, key, opts.environ)
               for juror, key in zip(jury_of(opts).jurors, keys, strict=True)]
    rejects_path, report_path = targets.path("rejects"), targets.path("report")
    if rejects_path is None or report_path is None:
        raise UsageError("with the verdicts on stdout, give --rejects and --report.")
    path_of_store = targets.path("store")
    assert path_of_store is not None
    with held(opts) as source:
        store = Store(path_of_store)
        try:
            asker = Asker(opts, store, keys, hook, signers)
            _ask_all(asker, source)
            if asker.refused is not None and asker.unreachable:
                sent = asker.requests.sent
                raise UsageError(
                    f"no request reached the server: every attempt failed the same way "
                    f"({asker.refused}), so the run stopped: {sent:,} request"
                    f"{'s were' if sent != 1 else ' was'} tried and none answered (nothing "
                    f"paid). Check --base-url ({_url(opts)}): is the server running, and "
                    "on this host and port?")
            if asker.refused is not None:
                sent = asker.requests.sent
                raise UsageError(
                    f"the server refused every request the same way ({asker.refused}), so the "
                    f"run stopped: {sent:,} request{'s were' if sent != 1 else ' was'} sent "
                    f"and none answered (nothing paid). Check the API key variable, --model "
                    f"and --base-url ({_url(opts)}); the server's message above says "
                    "what it wants." + (
                        " It names response_format: this server may not take the structured "
                        "output asked for (llama.cpp's takes --response-format json_object; "
                        "any server, --response-format none)."
                        if "response_format" in asker.refused else ""))
            if asker.fatal is not None:
                raise UsageError(
                    f"the server refused the request ({asker.fatal}); check the API key "
                    f"variable, --model and --base-url ({_url(opts)}). Answers received "
                    f"so far are kept in {path_of_store}.")
            with targets:
                out, rejects, report_out = (targets.open(role)
                                            for role in ("output", "rejects", "report"))
                writer = Writer(opts, store)
                writer.write(source, out, rejects)
                source.check_unchanged()  # pass 2 read what pass 1 asked about
                if not writer.counts.rejected:
                    targets.empty("rejects")
                report = _report(opts, asker, writer, path_of_store, targets.path("rejects"),
                                 started)
                report_out.write(encode_report(report))
        finally:
            store.close()
    return report


def _url(opts: Options) -> str:
    """Where the judge is asked, as a sentence names it (a jury's jurors: in its file)."""
    return opts.config.url if opts.jury is None else f"each juror's in {opts.jury.path}"


def _report(opts: Options, asker: Asker, writer: Writer, store: str, rejects: str | None,
            started: float) -> JudgeReport:
    c = writer.counts
    judged = sum(writer.by_status.values())
    unscored = writer.by_status["unscored"]
    rate = unscored / judged if judged else None
    prices = price(opts.price_in, opts.price_out)
    priced = prices is not None or (opts.jury is not None and opts.jury.priced)
    if c.not_judged:  # stopped by a limit, or by anything else: never a clean run
        exit_code = EXIT_INCOMPLETE
    elif c.rejected or too_unscored(unscored, judged, opts.max_unscored_rate):
        exit_code = EXIT_REJECTS
    else:
        exit_code = EXIT_OK
    warnings = []
    if asker.counter is not None and not asker.counter.exact:
        warnings.append(f"token counts for --tpm/--max-cost: {asker.counter.note}")
    cold = [j.name for j in asker.jury.jurors if j.samples > 1 and j.config.temperature == 0]
    if cold:
        warnings.append(f"several samples at temperature 0 ({', '.join(cold)}): a server may "
                        "answer them alike, so their consistency says little; sample at a "
                        "temperature above 0 (e.g. --temperature 0.7)")
    if asker.oversized:
        limit = answer_bytes(opts.config.max_output_tokens)
        warnings.append(f"answers longer than an answer of --max-output-tokens can be ({limit:,} "
                        "bytes), read no further, stored cut there and unscored (bad_response): "
                        f"{asker.oversized:,}")
    if asker.usage_unknown:
        warnings.append("answers without usable token counts (none, or negative ones), each "
                        "counted in cost_usd at its worst case (its input estimate and "
                        f"--max-output-tokens): {asker.usage_unknown:,}")
    return JudgeReport(
        command="judge", evalstream=__version__, input=opts.input, output=opts.output,
        rejects=rejects, store=store, judge=writer.info, counts=c,
        by_status={s: writer.by_status[s] for s in VOTE_STATUSES},
        by_cause=dict(sorted(writer.by_cause.items())), unscored_rate=rate,
        max_unscored_rate=opts.max_unscored_rate, requests=asker.requests,
        usage=tallied(asker.usage), usage_all=tallied(writer.usage_all),
        tokenizer=asker.counter.encoding if asker.counter is not None else None, prices=prices,
        cost_usd=round(asker.spent, 6) if priced else None, max_cost=opts.max_cost,
        max_requests=opts.max_requests,
        stopped_by=asker.stopped_by if c.not_judged else None,
        latency_ms=asker.histogram.latency(), not_judged=writer.not_judged,
        not_judged_listed=len(writer.not_judged),
        rejected_by_kind=dict(sorted(writer.rejected_by_kind.items())),
        without_structured_output=writer.unstructured, warnings=warnings,
        seconds=round(time.perf_counter() - started, 3), exit_code=exit_code,
        jury=writer.panels.report(asker.tallies, writer.escalations.report(asker.jury))
        if asker.jury.panel else None,
        confidence=writer.confidence.report())


def tallied(usage: list[int]) -> TokenUsage:
    """A run's token counts (input, output, reasoning of the output) as a report writes them."""
    return TokenUsage(usage[0], usage[1], usage[2] or None)


def first_state(source: HeldInput, case_id: str, rubric_id: str,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> inputs.JudgeState | None:
    """The judge state for (case_id, rubric_id) in a build output, or None."""
    for item in inputs.Reader(max_line_bytes).read_held(source):
        if isinstance(item, inputs.JudgeState) and (item.case_id, item.rubric_id) == (
                case_id, rubric_id):
            return item
    return None

