"""What a judge provider is: everything that differs between providers' APIs, behind one base
class. A provider is one module beside this one and one line of the registry
(``evalstream._judge.providers.REGISTRY``); nothing outside this package asks which provider
it is talking to.

What stays shared, and is not a provider's to change: the system text and the state as the
user message (``request.system_text``), the store key (SHA-256 of the provider's name, its
URL and the body), every check of the answer itself (``answer.read_text``/``read_json``:
exactly ``{status, reason}``, or a pairwise state's ``{reason, better}``: the ``Form`` a
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
from typing import Any, ClassVar, Protocol

import msgspec
from msgspec import Struct

from evalstream._judge.answer import VERDICT, Form, Parsed, excerpt, http_error_detail, unscored
from evalstream._judge.batch.formats import Limits, Outcome, ResultLine


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
    def answer(self) -> str: ...  # the name of the answer's Form (answer.FORMS)


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
    key_required: ClassVar[bool] = True  # the public endpoint refuses requests without one
    credential_headers: ClassVar[tuple[str, ...]]  # the headers of ``headers`` holding the key
    request_id_header: ClassVar[str]  # the response header naming the request
    batch_speaks: ClassVar[str]  # what `batch prepare --provider`'s help says of it
    batch_limits: ClassVar[Limits]  # what one request file may hold

    # -- a request -------------------------------------------------------------------------------
    def url(self, config: Config) -> str:
        """Where a request is sent (part of the store key)."""
        return config.base_url + self.path

    @abc.abstractmethod
    def headers(self, api_key: str | None) -> dict[str, str]:
        """The provider's own headers of every call (live and batch), the key among them
        when there is one (in ``credential_headers``)."""

    @abc.abstractmethod
    def body(self, config: Config, system: str, state: str) -> bytes:
        """The request body for the system text and a judge state's JSON text: the bytes
        sent, hashed into the store key, written into batch files. Deterministic."""

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
