"""A Spark standalone cluster on this machine (a master and N workers) from the pyspark
distribution this interpreter has, for trying the minikafka source and sink on executors
outside the driver: `spark-class org.apache.spark.deploy.master.Master` and
`...deploy.worker.Worker`, as Spark's sbin/start-master.sh and start-worker.sh run them.

Everything binds to one host (127.0.0.1 by default); each daemon logs to
<work dir>/<name>.log, workers keep their executors' files under <work dir>/<name>/. The
workers' executors run this interpreter's Python (PYSPARK_PYTHON), so they import the
same minikafka as the driver.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
POLL_S = 0.2


class StandaloneError(RuntimeError):
    """A daemon of the cluster did not start, or exited."""


def spark_home() -> Path:
    """SPARK_HOME as pyspark finds it (the pyspark package itself, for a pip install)."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    webui_port: int

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise StandaloneError(
                f"spark {self.name} exited with status {self.process.returncode}:\n{tail}"
            )


class StandaloneCluster:
    """`start()` a master and `workers` workers (each `worker_cores` cores and
    `worker_memory` for executors), `stop()` them. `master_url` is what a driver's
    `--master` takes."""

    def __init__(
        self,
        work_dir: Path,
        workers: int = 2,
        *,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        daemon_memory: str = "256m",
        host: str = "127.0.0.1",
    ) -> None:
        self.work_dir = work_dir
        self.host = host
        self.worker_count = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.daemon_memory = daemon_memory
        self.master: Daemon | None = None
        self.workers: list[Daemon] = []
        self.master_port = 0

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        assert self.master is not None, "not started"
        return f"http://{self.host}:{self.master.webui_port}"

    def _env(self) -> dict[str, str]:
        home = spark_home()
        return {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": self.host,
            # The daemons' own heap (sbin/spark-daemon.sh's SPARK_DAEMON_MEMORY).
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            # Executors' Python workers: this interpreter, which has minikafka.
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_DIRS": str(self.work_dir / "local"),
        }

    def _launch(self, name: str, args: list[str], webui_port: int) -> Daemon:
        log = self.work_dir / f"{name}.log"
        spark_class = spark_home() / "bin" / "spark-class"
        with log.open("ab") as out:
            process = subprocess.Popen(
                [str(spark_class), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env(),
                cwd=self.work_dir,
                # Its own process group: stopping (or killing) a worker takes its executors
                # and their Python workers with it, as a machine going down would.
                start_new_session=True,
            )
        return Daemon(name, process, log, webui_port)

    def state(self) -> dict[str, Any]:
        """The master's JSON status (/json/): its workers, applications."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as r:
            return dict(json.load(r))

    def alive_workers(self) -> int:
        try:
            workers = self.state().get("workers", [])
        except (urllib.error.URLError, OSError, ValueError):
            return 0
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def _wait(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            for d in [self.master, *self.workers]:
                if d is not None:
                    d.check_alive()
            if time.monotonic() > deadline:
                raise StandaloneError(f"timed out after {timeout_s:g}s waiting for {what}")
            time.sleep(POLL_S)

    def start(self, timeout_s: float = 90.0) -> None:
        """Start the daemons and wait until every worker has registered with the master."""
        self.launch()
        self.wait_ready(timeout_s)

    def launch(self) -> None:
        """Start the daemons, without waiting for them (`wait_ready`)."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "local").mkdir(exist_ok=True)
        try:
            self.master_port = free_port(self.host)
            webui = free_port(self.host)
            self.master = self._launch(
                "master",
                [
                    MASTER_CLASS,
                    *("--host", self.host, "--port", str(self.master_port)),
                    *("--webui-port", str(webui)),
                ],
                webui,
            )
            # Workers started alongside retry registering until the master listens.
            for i in range(self.worker_count):
                self.workers.append(self._start_worker(f"worker-{i + 1}"))
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Wait until every worker has registered with the master (its /json/ says ALIVE)."""
        try:
            self._wait(
                lambda: self.alive_workers() >= self.worker_count,
                timeout_s,
                f"{self.worker_count} workers to register with the master",
            )
        except BaseException:
            self.stop()
            raise

    def _start_worker(self, name: str) -> Daemon:
        work = self.work_dir / name
        work.mkdir(exist_ok=True)
        webui = free_port(self.host)
        return self._launch(
            name,
            [
                WORKER_CLASS,
                *("--host", self.host, "--webui-port", str(webui)),
                *("--cores", str(self.worker_cores), "--memory", self.worker_memory),
                *("--work-dir", str(work)),
                self.master_url,
            ],
            webui,
        )

    def kill_worker(self, index: int) -> None:
        """SIGKILL a worker and everything it started (its executors, their Python
        workers): a machine lost mid-job."""
        worker = self.workers[index]
        os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.wait()

    def stop(self, timeout_s: float = 30.0) -> None:
        daemons = [*self.workers, *([self.master] if self.master is not None else [])]
        for d in daemons:
            # The whole group, also when the daemon itself is gone: its executors may not be.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(d.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for d in daemons:
            try:
                d.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(d.process.pid, signal.SIGKILL)
                d.process.wait()
        self.workers = []
        self.master = None
