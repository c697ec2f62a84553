"""What a judge provider is: everything that differs between providers' APIs, behind one base
class. A provider is one module beside this one and one line of the registry
(``evalstream._judge.providers.REGISTRY``); nothing outside this package asks which provider
it is talking to.

What stays shared, and is not a provider's to change: the system text and the state as the
user message (``request.system_text``), the store key (SHA-256 of the provider's name, its
URL and the body), every check of the answer itself (``answer.read_text``/``read_json``:
exactly ``{reason, status}``, or a pairwise state's ``{reason, better}``: the ``Form`` a
provider asks for with ``config.answer`` and reads with, fail-closed), HTTP with the one
retry layer and the key's redaction (``transport``, ``batch.client``), and the batch
folder's manifest. A provider says how those travel: the body's shape, the response's
shape, the headers, the batch lines and endpoints.

Each method is given the ``JudgeConfig`` (as ``Config``: what a provider may read of it), so
a provider whose URL or headers depend on the model or a deployment (Azure, Bedrock) needs
no new parameter, and several judges of one run (a jury) are several configs, each with its
provider.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol

import msgspec
from msgspec import Struct

from evalstream._judge.answer import VERDICT, Form, Parsed, excerpt, http_error_detail, unscored
from evalstream._judge.batch.formats import Limits, Outcome, ResultLine
from evalstream.errors import UsageError


class Message(Struct, gc=False):
    """One chat message."""

    role: str
    content: str


class Config(Protocol):
    """What a provider reads of a judge config (``request.JudgeConfig``)."""

    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str: ...  # checked, without trailing slashes
    @property
    def temperature(self) -> float | None: ...  # None: not sent
    @property
    def max_output_tokens(self) -> int: ...
    @property
    def encoder(self) -> msgspec.json.Encoder: ...  # the config's own: one per run
    @property
    def response_format(self) -> str: ...  # one of the provider's ``response_formats``
    @property
    def reasoning_effort(self) -> str | None: ...  # OpenAI's reasoning models: low, high...
    @property
    def thinking_budget(self) -> int | None: ...  # Anthropic's (and Gemini's) thinking tokens
    @property
    def deployment(self) -> str: ...  # Azure: the deployment ("": the model's name)
    @property
    def api_version(self) -> str: ...  # Azure: the api-version ("": the provider's)
    @property
    def region(self) -> str: ...  # Bedrock: the AWS region ("": the environment's)
    @property
    def allows_na(self) -> bool: ...  # False: the schema asked for leaves `na` out
    @property
    def answer(self) -> str: ...  # the name of the answer's Form (answer.FORMS)
    @property
    def confidence(self) -> bool: ...  # --confidence: ask for log probabilities (issue 29)


class Signer(NamedTuple):
    """Headers computed from each request (its URL and body), and the secret among what it
    sends that a server could echo (a session token), to be redacted as a key is."""

    sign: Callable[[str, bytes], dict[str, str]]
    secret: str | None


class Unconfirmed(Exception):
    """A create call ended without an answer that says whether the batch was made."""


class BatchCalls(Protocol):
    """The calls of ``batch.client.BatchClient`` a provider's batch endpoints are made of:
    each with the retry rules, the bounded reads and the key's redaction of that client."""

    base: str
    max_attempts: int

    def url(self, path: str) -> str: ...

    async def json(self, method: str, path_or_url: str, *, body: Any = None,
                   headers: dict[str, str] | None = None,
                   creates: bool = False) -> dict[str, Any]: ...

    async def save(self, url: str, path: str) -> None: ...  # a GET streamed into a file


@dataclass
class Submission:
    """One request file to submit and what the manifest holds of its batch so far; ``save``
    commits what is learned to the manifest at once (a kill just after loses nothing)."""

    name: str  # the request file's name in the folder
    path: str
    saved: Mapping[str, Any]  # the manifest's row of its batch ({} when none)
    config_hash: str
    resubmit_unconfirmed: bool
    save: Callable[..., None]


class Provider(abc.ABC):
    """One provider's API. Subclasses set the class attributes and the abstract methods; the
    defaults fit a provider whose errors are ``{"error": {"message"}}`` and whose tokenizer is
    not known offline."""

    name: ClassVar[str]  # the --provider value; stored in verdicts, stores and manifests
    title: ClassVar[str]  # how sentences name it: "OpenAI"
    speaks: ClassVar[str]  # what --provider's help says of it: "Anthropic messages"
    base_url: ClassVar[str]  # the public endpoint, the default --base-url
    path: ClassVar[str]  # where requests go, below the base URL
    key_env: ClassVar[str]  # the environment variable of the key, the default --api-key-env
    key_env_also: ClassVar[tuple[str, ...]] = ()  # read when key_env is not set (by default)
    key_required: ClassVar[bool] = True  # the public endpoint refuses requests without one
    # every endpoint of it wants the key (Azure, Gemini), not only the public one
    key_always: ClassVar[bool] = False
    url_query: ClassVar[tuple[str, ...]] = ()  # what --base-url may carry as a query
    # where --base-url is required (no public endpoint): what it is, for the sentence
    base_url_help: ClassVar[str] = ""
    credential_headers: ClassVar[tuple[str, ...]]  # the headers of ``headers`` holding the key
    request_id_header: ClassVar[str]  # the response header naming the request
    batch_speaks: ClassVar[str]  # what `batch prepare --provider`'s help says of it
    # why `batch` cannot be used with it, where evalstream does not speak its batch form
    # (then ``NoBatch`` gives the batch members); "" where it does
    batch_none: ClassVar[str] = ""
    batch_limits: ClassVar[Limits]  # what one request file may hold
    # How the answer is asked for (--response-format): the first is the default. ``none``
    # asks for nothing (the answer instruction alone); the answer is checked all the same.
    response_formats: ClassVar[tuple[str, ...]] = ("json_schema", "none")
    # The settings of a judge config beyond the shared ones that this provider reads (the
    # names of ``Config``'s properties); any other given is refused with a sentence.
    settings: ClassVar[tuple[str, ...]] = ()

    def check(self, config: Config) -> None:
        """Raise UsageError where the config asks for what this provider cannot do (beyond
        ``response_formats`` and ``settings``, which ``JudgeConfig`` checks)."""
        return None

    def default_base_url(self, config: Config) -> str:
        """The base URL when --base-url is not given (``base_url``; Bedrock's depends on the
        region). An empty one: --base-url is required."""
        return self.base_url

    # Whether ``body`` asks for the output tokens' log probabilities under --confidence, and
    # ``read`` gives the status's confidence from them (``_judge.logprobs``); where not, a
    # panel's votes give it (``source: samples``), or nothing does, and the run says so.
    logprobs: ClassVar[bool] = False

    def reasons(self, config: Config) -> bool:
        """Whether the judge thinks before it answers (a reasoning model, a thinking budget):
        its reasoning then counts against --max-output-tokens, and --dry-run says so."""
        return False

    def sent_temperature(self, config: Config) -> float | None:
        """The temperature the body carries (what a verdict records): None where it is not
        sent (reasoning models, which refuse one)."""
        return config.temperature

    # -- a request -------------------------------------------------------------------------------
    def url(self, config: Config) -> str:
        """Where a request is sent (part of the store key)."""
        return config.base_url + self.path

    @abc.abstractmethod
    def headers(self, api_key: str | None) -> dict[str, str]:
        """The provider's own headers of every call (live and batch), the key among them
        when there is one (in ``credential_headers``)."""

    def signer(self, config: Config, api_key: str | None,
               environ: Mapping[str, str]) -> Signer | None:
        """What computes headers from each request itself (a signature: Bedrock's SigV4, with
        credentials found in ``environ``), or None (the default: ``headers`` say all).
        Raises UsageError when it cannot sign. What it gives is never stored, like every
        header."""
        return None

    @abc.abstractmethod
    def body(self, config: Config, system: str, state: str) -> bytes:
        """The request body for the system text and a judge state's JSON text: the bytes
        sent, hashed into the store key, written into batch files. Deterministic."""

    def samples_body(self, config: Config, body: bytes, n: int) -> bytes | None:
        """The body of ``body``'s request asking for ``n`` samples at once, the input billed
        once (OpenAI's ``n``), or None where the API has no such parameter: each sample is
        then a request of its own (issue 26)."""
        return None

    def split_samples(self, body: bytes) -> list[bytes]:
        """A 200 response to a ``samples_body`` request, as the response of each sample it
        holds (fewer than asked where a server ignores ``n``: the rest are asked one by one).
        What cannot be split is one response (read, and stored, as the first sample's)."""
        return [body]

    # -- an answer -------------------------------------------------------------------------------
    @abc.abstractmethod
    def read(self, body: bytes, form: Form) -> Parsed:
        """A 200 response body: its answer in ``form`` (through ``answer.read_text``/
        ``read_json``), the token usage, the response id, or unscored where the response says
        why (a refusal, a cut answer, not a response of this API)."""

    def parse(self, body: bytes, form: Form = VERDICT) -> Parsed:
        """A stored 200 response body read, fail-closed: the entry point of the answer
        parser for the live judge, ``--dry-run`` and ``batch collect`` alike
        (``JudgeConfig.parse`` gives the form of its own requests)."""
        try:
            return self.read(body, form)
        except RecursionError:  # msgspec, skipping a value nested deeper than it can go
            return unscored("bad_response", f"nested too deeply to read: {excerpt(body)}")

    def error_detail(self, status: int, body: bytes) -> str:
        """``HTTP 400: <the error's message, or the body's start>`` of an error response."""
        return http_error_detail(status, body)

    # -- tokens ----------------------------------------------------------------------------------
    def encoding(self, model: str) -> str | None:
        """The encoding (``o200k_base``, ``cl100k_base``) of the model's family, or None when it
        is not known offline: counts are then an estimate, and said to be."""
        return None

    def tokenizer_unknown(self, model: str) -> str:
        """Why a model's counts are an estimate (when ``encoding`` gives None)."""
        return f"the tokenizer of {model} is not known offline"

    # -- batch files -----------------------------------------------------------------------------
    @abc.abstractmethod
    def request_line(self, custom_id: str, body: bytes) -> bytes:
        """One line of a request file (with its newline) around the live body, unchanged.
        ``custom_id`` is hex and ``body`` JSON: joined from bytes, never encoded again."""

    @abc.abstractmethod
    def result_problem(self, line: ResultLine) -> tuple[str, str] | None:
        """Why a decoded result line is not a result of this provider's format: (JSON path,
        sentence), or None."""

    @abc.abstractmethod
    def outcome(self, line: ResultLine) -> Outcome:
        """What a result line (passed by ``result_problem``) says about its request."""

    # -- batch endpoints -------------------------------------------------------------------------
    def endpoint(self, config: Config, path: str) -> str:
        """The URL of a batch endpoint (``/files``, ``/batches?limit=100``) of this config."""
        return config.base_url + path

    @abc.abstractmethod
    def batch_path(self, batch_id: str) -> str:
        """Where a batch is asked for, below the base URL."""

    @abc.abstractmethod
    def batch_status(self, batch: Mapping[str, Any]) -> str:
        """A batch object's status, as the provider words it."""

    @abc.abstractmethod
    def batch_ended(self, status: str) -> bool:
        """Whether a batch of this status has ended (its results are final)."""

    @abc.abstractmethod
    async def submit(self, client: BatchCalls, job: Submission) -> dict[str, Any]:
        """Create the batch of a request file (uploading it first where the API wants that);
        the batch object. Every id learned is saved (``job.save``) before the next call, and
        a create whose answer was lost is never sent again blindly."""

    @abc.abstractmethod
    async def download(self, client: BatchCalls, batch: Mapping[str, Any], folder: str,
                       stem: str) -> list[str]:
        """An ended batch's result files saved into ``folder`` (named from ``stem``), once,
        atomically; their names."""


class NoBatch:
    """The batch members of a provider whose batch form evalstream does not speak: each
    refuses with the provider's ``batch_none`` sentence (``batch prepare`` says it first)."""

    batch_none: ClassVar[str]

    def _refuse(self) -> UsageError:
        return UsageError(self.batch_none)

    def request_line(self, custom_id: str, body: bytes) -> bytes:
        raise self._refuse()

    def result_problem(self, line: ResultLine) -> tuple[str, str] | None:
        raise self._refuse()

    def outcome(self, line: ResultLine) -> Outcome:
        raise self._refuse()

    def batch_path(self, batch_id: str) -> str:
        raise self._refuse()

    def batch_status(self, batch: Mapping[str, Any]) -> str:
        raise self._refuse()

    def batch_ended(self, status: str) -> bool:
        raise self._refuse()

    async def submit(self, client: BatchCalls, job: Submission) -> dict[str, Any]:
        raise self._refuse()

    async def download(self, client: BatchCalls, batch: Mapping[str, Any], folder: str,
                       stem: str) -> list[str]:
        raise self._refuse()
