"""Fake judge servers for the judge tests: real processes on 127.0.0.1, one per setting."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.judge.support import FAKE_KEY, FakeServer


@pytest.fixture(scope="session")
def fake() -> Iterator[Callable[..., FakeServer]]:
    """``fake(*args)``: a fake server started with those arguments (one per distinct set, kept
    for the session), its counts reset for the test that asks."""
    servers: dict[tuple[str, ...], FakeServer] = {}

    def get(*args: str) -> FakeServer:
        if args not in servers:
            servers[args] = FakeServer(*args)
        server = servers[args]
        server.reset()
        return server

    yield get
    for server in servers.values():
        server.stop()


@pytest.fixture()
def server(fake: Callable[..., FakeServer]) -> FakeServer:
    """A fast fake server that requires the fake key and asks 429s to wait 0.1 s."""
    return fake("--key", FAKE_KEY, "--retry-after", "0.1", "--slow", "3")
