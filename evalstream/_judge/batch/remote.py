"""``batch submit`` and ``batch status``: the request files of a prepared folder to the
provider, and the results back into ``DIR/results/``.

``submit`` uploads each request file (OpenAI) and creates its batch, committing every id to
the manifest the moment it is known, so a submit stopped at any point (an error, Ctrl-C,
``kill -9``) and run again creates no second batch of a file it created one for: a file with
a batch id is skipped, an uploaded file is not uploaded again, and a create whose reply was
lost is looked up (OpenAI: a batch made from the same uploaded file) before it is sent again.
Anthropic has no such lookup: a lost reply stops submit with a message, and
``--resubmit-unconfirmed`` sends that file again.

``status`` asks for each batch's state and, once a batch has ended (completed, expired,
cancelled or failed; Anthropic: ended), downloads its results (OpenAI: the output and error
files; Anthropic: the results) into ``DIR/results/``, atomically and once; ``collect`` reads
them from there. A batch that ended without failing but gave no result file at all (OpenAI:
``completed`` with neither an output nor an error file) is not done: status says so, exits
3 and asks for it again next time (``collect`` lists its states missing meanwhile). Results
that leave requests out are collect's to count: their states are listed missing (exit 3),
never judged. ``--wait`` polls until every batch has ended, or until ``--max-wait`` seconds
have passed: a command a CI job runs must end, whatever the provider does (a batch
stuck in one state, a status no provider documents, a server that crashed while making the
results). By default that is 25 hours: the providers end every batch within their 24-hour
window (an expired batch keeps the results that ran), and an hour more lets them finalize.

How a file is submitted, what a batch's status is and when it has ended, and which result
files it has are the provider's (``Provider.submit``, ``batch_status``, ``batch_ended``,
``download``); the order of the calls and the manifest are kept here.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import xxhash
from msgspec import Struct

from evalstream._judge.answer import excerpt
from evalstream._judge.batch.client import BatchClient
from evalstream._judge.batch.collect import RESULTS_FOLDER
from evalstream._judge.batch.manifest import BatchFile, Manifest
from evalstream._judge.providers.base import Provider, Submission
from evalstream._judge.transport import key_from_environment
from evalstream.errors import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EvalstreamError,
    InputError,
    OutputError,
    UsageError,
)

DEFAULT_TIMEOUT = 600.0  # an upload of 200 MB takes minutes on a slow line
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_POLL = 60.0
# OpenAI's completion_window and Anthropic's expiry are 24 h; a batch not ended an hour after
# that will not end by waiting.
DEFAULT_MAX_WAIT = 25 * 3600.0
SHOWN_PENDING = 5  # batches the sentence of a --wait that gave up names


@dataclass
class Options:
    """Everything submit and status need (``evalstream.batch_submit``, ``batch_status``)."""

    folder: str
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    resubmit_unconfirmed: bool = False  # submit: send a file whose create reply was lost
    wait: bool = False  # status: poll until every batch has ended
    poll: float = DEFAULT_POLL
    max_wait: float = DEFAULT_MAX_WAIT  # status --wait: seconds to wait in all
    download: bool = True  # status: download the results of ended batches
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


class Entry(Struct):
    """One request file and its batch, as ``submit`` and ``status`` report it."""

    file: str
    requests: int
    input_file_id: str | None
    batch_id: str | None
    status: str  # not submitted, submitted, the provider's status...
    counts: dict[str, int]
    results: list[str]  # result files downloaded into DIR/results/
    downloaded: bool  # ended, and its results (if any) are in DIR/results/
    error: str | None = None  # why the provider failed the batch, or gave no results


class BatchSummary(Struct):
    """What ``submit`` or ``status`` found: one entry a request file."""

    command: str
    folder: str
    provider: str
    files: list[Entry]
    submitted_now: int
    downloaded_now: int
    ended: int  # batches that have ended (results downloaded where there were any)
    exit_code: int
    stopped: str | None = None  # why --wait gave up before every batch had ended


def _client(opts: Options, manifest: Manifest) -> BatchClient:
    config = manifest.config()
    key = key_from_environment(config, opts.api_key_env, opts.environ)
    if opts.timeout <= 0 or opts.max_attempts < 1:
        raise UsageError("--timeout must be above 0 and --max-attempts at least 1.")
    return BatchClient(config, key, timeout=opts.timeout, max_attempts=opts.max_attempts)


def _check_file(folder: str, f: BatchFile) -> str:
    """The path of a request file, once it is known to hold what prepare wrote."""
    path = os.path.join(folder, f.name)
    try:
        size = os.path.getsize(path)
        digest = xxhash.xxh3_128()
        with open(path, "rb") as src:
            for block in iter(lambda: src.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if size != f.bytes or digest.hexdigest() != f.xxh3:
        raise InputError(f"{path} changed since it was prepared ({size:,} bytes, prepared "
                         f"{f.bytes:,}); its custom_ids would no longer match the manifest: "
                         "prepare the states again into a new folder.")
    return path


def _empty_handed(f: BatchFile, b: Mapping[str, Any]) -> bool:
    """Whether a batch ended without failing yet gave no result file for its requests
    (OpenAI: `completed` with neither an output nor an error file): they have no result, and
    the files may come later, so every status asks for it again and exits 3 until they do."""
    return b.get("downloaded") == "[]" and f.requests > 0 and not b.get("error")


def _entry(f: BatchFile, b: dict[str, Any] | None, folder: str) -> Entry:
    b = b or {}
    counts = msgspec.json.decode(b["counts"]) if b.get("counts") else {}
    results = msgspec.json.decode(b["downloaded"]) if b.get("downloaded") else []
    status = b.get("status") or ("submitted" if b.get("batch_id") else "not submitted")
    if b.get("creating") and not b.get("batch_id"):
        status = "unconfirmed"
    error = b.get("error")
    empty = _empty_handed(f, b)
    if empty:
        error = (f"the provider says the batch is {status!r} but gave no result file: its "
                 f"{f.requests:,} requests have no result yet. Run `evalstream batch status "
                 f"{folder}` again later; if none ever comes, `evalstream batch collect` and "
                 "prepare the states without a verdict again into a new folder by `evalstream "
                 f"batch prepare` with `--only-missing {folder}`.")
    return Entry(f.name, f.requests, b.get("input_file_id"), b.get("batch_id"), status, counts,
                 results, b.get("downloaded") is not None and not empty, error)


# -- submit --------------------------------------------------------------------------------------
def submit(opts: Options) -> BatchSummary:
    """Upload and create a batch for every request file that has none yet."""
    manifest = Manifest.open(opts.folder)
    try:
        client = _client(opts, manifest)
        done = asyncio.run(_submit_all(opts, manifest, client))
        entries = [_entry(f, manifest.batch(f.n), opts.folder) for f in manifest.files()]
    finally:
        manifest.close()
    waiting = sum(1 for e in entries if e.batch_id is None)
    return BatchSummary("batch submit", opts.folder, manifest.provider, entries, done, 0,
                        sum(1 for e in entries if client.config.api.batch_ended(e.status)),
                        EXIT_INCOMPLETE if waiting else EXIT_OK)


async def _submit_all(opts: Options, manifest: Manifest, client: BatchClient) -> int:
    done = 0
    async with client:
        for f in manifest.files():
            b = manifest.batch(f.n) or {}
            if b.get("batch_id"):
                continue
            job = Submission(f.name, _check_file(opts.folder, f), b,
                             manifest.meta["config_hash"], opts.resubmit_unconfirmed,
                             functools.partial(manifest.save_batch, f.n))
            _save_created(manifest, f, await client.config.api.submit(client, job))
            done += 1
    return done


def _save_created(manifest: Manifest, f: BatchFile, batch: dict[str, Any]) -> None:
    batch_id = batch.get("id")
    if not isinstance(batch_id, str) or not batch_id:
        raise OutputError(f"creating the batch of {f.name} gave no batch id: {str(batch)[:200]}")
    manifest.save_batch(f.n, batch_id=batch_id, creating=None,
                        status=batch.get("processing_status") or batch.get("status"),
                        updated=time.time())


# -- status --------------------------------------------------------------------------------------
def status(opts: Options) -> BatchSummary:
    """Each batch's state; the results of ended batches downloaded into DIR/results/."""
    manifest = Manifest.open(opts.folder)
    try:
        client = _client(opts, manifest)
        downloaded, stopped = asyncio.run(_status_all(opts, manifest, client))
        entries = [_entry(f, manifest.batch(f.n), opts.folder) for f in manifest.files()]
    finally:
        manifest.close()
    ended = sum(1 for e in entries if client.config.api.batch_ended(e.status))
    complete = ended == len(entries) and all(e.downloaded or not opts.download
                                             for e in entries)
    return BatchSummary("batch status", opts.folder, manifest.provider, entries, 0, downloaded,
                        ended, EXIT_OK if complete else EXIT_INCOMPLETE, stopped)


async def _status_all(opts: Options, manifest: Manifest,
                      client: BatchClient) -> tuple[int, str | None]:
    """Result files downloaded now, and why ``--wait`` gave up (None: it did not)."""
    downloaded = 0
    started = time.monotonic()
    async with client:
        while True:
            # (file, batch id, status) of the batches that have not ended (a file never
            # submitted never will: it is not waited for)
            pending: list[tuple[str, str, str]] = []
            for f in manifest.files():
                b = manifest.batch(f.n)
                if not b or not b.get("batch_id"):
                    continue
                if b.get("downloaded") is not None and not _empty_handed(f, b):
                    continue  # ended and its results saved: nothing will change
                batch = await client.get(str(b["batch_id"]))
                state = _record(client.config.api, manifest, f, batch)
                if not client.config.api.batch_ended(state):
                    pending.append((f.name, str(b["batch_id"]), state))
                    continue
                if opts.download:
                    downloaded += await _download(opts, manifest, client, f, batch, state)
            if not opts.wait or not pending:
                return downloaded, None
            # A round of calls in flight is bounded by --timeout and --max-attempts; the
            # deadline is checked between rounds, and no sleep goes past it.
            waited = time.monotonic() - started
            if waited >= opts.max_wait:
                return downloaded, _gave_up(opts, pending, waited)
            await asyncio.sleep(min(opts.poll, opts.max_wait - waited))


def _gave_up(opts: Options, pending: list[tuple[str, str, str]], waited: float) -> str:
    """The sentence of a ``--wait`` that reached ``--max-wait``: the batches still waited for,
    their last status, how long it waited, and what to do."""
    shown = "; ".join(f"{name} (batch {batch_id}) is still {state!r}"
                      for name, batch_id, state in pending[:SHOWN_PENDING])
    if len(pending) > SHOWN_PENDING:
        shown += f"; and {len(pending) - SHOWN_PENDING:,} more"
    return (f"--wait gave up after {_duration(waited)} (--max-wait {opts.max_wait:g}) with "
            f"{len(pending):,} batch(es) not ended: {shown}. Run `evalstream batch status "
            f"{opts.folder} --wait` again to wait longer; a batch its provider never ends can "
            "be cancelled at the provider, its results collected with `evalstream batch "
            "collect`, and the states without a verdict prepared again into a new folder by "
            f"`evalstream batch prepare` with `--only-missing {opts.folder}`.")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _record(api: Provider, manifest: Manifest, f: BatchFile, batch: dict[str, Any]) -> str:
    state = api.batch_status(batch)
    if not state:  # no status at all: not a batch object, and waiting would never end
        raise OutputError(f"the provider answered for {f.name}'s batch {batch.get('id')} with "
                          "no status: "
                          f"{excerpt(msgspec.json.encode(batch))}; is the base URL the batch "
                          "was prepared for the provider's API?")
    counts = batch.get("request_counts") or {}
    error = None
    errors = batch.get("errors")
    if isinstance(errors, dict) and errors.get("data"):
        first = errors["data"][0] or {}
        error = f"{first.get('code')}: {first.get('message')}" + (
            f" (line {first['line']})" if first.get("line") else "")
    manifest.save_batch(
        f.n, status=state, updated=time.time(),
        counts=msgspec.json.encode({k: v for k, v in counts.items()
                                    if isinstance(v, int)}).decode(),
        output_file_id=batch.get("output_file_id"), error_file_id=batch.get("error_file_id"),
        results_url=batch.get("results_url"), error=error)
    return state


async def _download(opts: Options, manifest: Manifest, client: BatchClient, f: BatchFile,
                    batch: dict[str, Any], state: str) -> int:
    folder = os.path.join(opts.folder, RESULTS_FOLDER)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {folder}: {exc.strerror or exc}") from exc
    try:
        saved = await client.config.api.download(client, batch, folder,
                                                 f.name.removesuffix(".jsonl"))
    except EvalstreamError as exc:
        # The same class (and exit code), with the batch named: a 404 on its own would only
        # suggest a wrong key or URL, where the batch is known to exist.
        raise type(exc)(
            f"{f.name}'s batch {batch.get('id')} has ended ({state!r}) but its results could "
            f"not be downloaded: {exc} The results saved so far are kept; run `evalstream "
            f"batch status {opts.folder}` again later; if they never come, `evalstream batch "
            "collect` what came back and prepare the rest again into a new folder by "
            f"`evalstream batch prepare` with `--only-missing {opts.folder}`."
        ) from exc
    manifest.save_batch(f.n, downloaded=msgspec.json.encode(saved).decode())
    return len(saved)
