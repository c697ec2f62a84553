"""A real Dask cluster for tests: ``dask scheduler`` and ``dask worker`` processes on
127.0.0.1 (free ports, one thread and a memory limit each), started and stopped by the
tests; and a local S3-compatible server (moto's server mode) for the object-store path."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DaskProcesses:
    """A scheduler and ``workers`` worker processes (each under its nanny)."""

    def __init__(self, folder: Path, workers: int = 2, memory: str = "1GiB") -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen[bytes]] = []
        file = folder / "scheduler.json"
        self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(file)])
        deadline = time.monotonic() + 60
        while not file.exists() or not file.read_text().strip():
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                self.stop()
                raise RuntimeError("the Dask scheduler did not start: "
                                   + (folder / "scheduler.log").read_text()[-2000:])
            time.sleep(0.1)
        time.sleep(0.2)  # written in full
        self.address: str = json.loads(file.read_text())["address"]
        for n in range(workers):
            self._start(f"worker{n}", ["worker", self.address, "--nthreads", "1",
                                       "--memory-limit", memory, "--no-dashboard",
                                       "--host", "127.0.0.1", "--name", f"w{n}"])
        self.wait_for(workers)

    def _start(self, name: str, args: list[str]) -> None:
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
        with open(self.folder / f"{name}.log", "wb") as log:  # the child keeps its own copy
            self.procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args],
                                               stdout=log, stderr=subprocess.STDOUT, env=env,
                                               start_new_session=True))

    def wait_for(self, workers: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)

    def worker_pids(self) -> list[int]:
        """The pids of the worker processes (not their nannies)."""
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            return sorted(client.run(os.getpid).values())

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


class S3Server:
    """moto's S3-compatible server on 127.0.0.1 with a bucket; ``options`` are the s3fs
    storage options (they are also set in the environment, for worker processes started
    after it)."""

    def __init__(self, folder: Path, bucket: str = "evalstream") -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        with open(folder / "moto.log", "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H",
                                          "127.0.0.1", "-p", str(self.port)], stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto did not start") from None
                time.sleep(0.1)
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                     aws_access_key_id="test", aws_secret_access_key="test"
                     ).create_bucket(Bucket=bucket)
        self.bucket = bucket

    def env(self) -> dict[str, str]:
        """Environment for s3fs in any process: fsspec reads FSSPEC_S3_* variables."""
        return {"FSSPEC_S3_ENDPOINT_URL": self.endpoint, "FSSPEC_S3_KEY": "test",
                "FSSPEC_S3_SECRET": "test", "AWS_DEFAULT_REGION": "us-east-1"}

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
