"""Write results.json with promptfoo itself: ``python -m tests.convert.promptfoo.make_results``.

promptfoo takes about 10 minutes to install on a fresh machine and needs Node.js, so CI does
not install it: results.json is checked in, written by this script, which is the exact
command (docs/testing.md). It starts evalstream's fake judge server
(``tests/judge/fake_server.py``), fills its port into promptfooconfig.yaml, and runs

    promptfoo eval -c CONFIG -o results.json --no-cache --no-progress-bar --no-table

with ``PROMPTFOO`` (default ``npx --yes promptfoo@0.121.20``; 0.121 is the last line that runs
on Node.js 20), telemetry, update checks and sharing off and its own config folder, so that
nothing but the fake server is asked. promptfoo exits 100 when some test failed: expected.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.judge.support import FakeServer

HERE = Path(__file__).resolve().parent
VERSION = "0.121.20"


def main() -> int:
    promptfoo = shlex.split(os.environ.get("PROMPTFOO", f"npx --yes promptfoo@{VERSION}"))
    server = FakeServer("--latency", "0")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "promptfooconfig.yaml"
            config.write_text((HERE / "promptfooconfig.yaml").read_text()
                              .replace("PORT", str(server.port)))
            env = {**os.environ, "PROMPTFOO_CONFIG_DIR": str(Path(tmp) / "promptfoo"),
                   "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
                   "PROMPTFOO_DISABLE_SHARING": "1", "OPENAI_API_KEY": "sk-fake-promptfoo-fixture"}
            done = subprocess.run([*promptfoo, "eval", "-c", str(config), "-o",
                                   str(HERE / "results.json"), "--no-cache",
                                   "--no-progress-bar", "--no-table"], env=env, cwd=tmp)
    finally:
        server.stop()
    return 0 if done.returncode in (0, 100) else done.returncode


if __name__ == "__main__":
    sys.exit(main())
