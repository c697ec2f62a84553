"""The bare client loops ``judge`` is measured against: N POSTs of a judge-sized body with at
most C in flight, nothing else. ``python -m benchmarks.judge_clients CLIENT N URL C`` with
CLIENT one of ``aiohttp``, ``httpx``, ``httpx2``; it prints nothing and exits 0 when every
answer was a 200 (``measure.py`` around it reads the time, CPU and RSS).

``python -m benchmarks.judge_clients replay BODIES URL C`` sends the bodies of a file (one a
line: evalstream's exact requests, written by ``benchmarks/judge_faults.py``) with aiohttp,
C in flight, as a plain loop would retry them: a 429 or 5xx is asked again after its
``Retry-After``, else after 0.5 s doubling; the wait is outside the C (a request that
waits is not in flight). It prints ``{"attempts", "by_status"}`` as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys

CLIENTS = ("aiohttp", "httpx", "httpx2")
# About the size of a built-in rubric's request: a 2.5 KB system message, a 1.5 KB state.
BODY = json.dumps({"model": "fake-judge-1", "messages": [
    {"role": "system", "content": "You are evaluating an AI assistant. " * 70},
    {"role": "user", "content": '{"user_input": "' + "Please book a table. " * 70 + '"}'}],
    "temperature": 0.0, "max_tokens": 256}).encode()
HEADERS = {"content-type": "application/json"}


async def _aiohttp(n: int, url: str, c: int) -> None:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:
        gate = asyncio.Semaphore(c)

        async def one() -> None:
            async with gate, session.post(url, data=BODY, headers=HEADERS) as response:
                await response.read()
                assert response.status == 200

        await asyncio.gather(*(one() for _ in range(n)))


async def _httpx(module: str, n: int, url: str, c: int) -> None:
    httpx = __import__(module)
    limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        gate = asyncio.Semaphore(c)

        async def one() -> None:
            async with gate:
                response = await client.post(url, content=BODY, headers=HEADERS)
                await response.aread()
                assert response.status_code == 200

        await asyncio.gather(*(one() for _ in range(n)))


async def _replay(bodies: list[bytes], url: str, c: int) -> dict[str, object]:
    import aiohttp

    by_status: dict[int, int] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:
        gate = asyncio.Semaphore(c)

        async def one(body: bytes) -> None:
            failed = 0
            while True:
                async with gate, session.post(url, data=body, headers=HEADERS) as response:
                    await response.read()
                    status = response.status
                    wait = response.headers.get("retry-after")
                by_status[status] = by_status.get(status, 0) + 1
                if status == 200:
                    return
                assert status == 429 or status >= 500, status
                failed += 1
                assert failed < 10, f"{failed} attempts refused"
                await asyncio.sleep(float(wait) if wait else 0.5 * 2 ** (failed - 1))

        await asyncio.gather(*(one(body) for body in bodies))
    return {"attempts": sum(by_status.values()), "by_status": by_status}


def main(argv: list[str]) -> int:
    client, url, c = argv[0], argv[2], int(argv[3])
    if client == "replay":
        with open(argv[1], "rb") as f:
            bodies = f.read().splitlines()
        print(json.dumps(asyncio.run(_replay(bodies, url, c))), file=sys.stderr)
    elif client == "aiohttp":
        asyncio.run(_aiohttp(int(argv[1]), url, c))
    else:
        asyncio.run(_httpx(client, int(argv[1]), url, c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
