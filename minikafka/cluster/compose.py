"""The docker-compose cluster (docker-compose.yml) driven from the host, as a user runs it.

A `ComposeCluster` is one compose project: its own project name (containers, network and
volumes of its own) and its own host ports for ZooKeeper, the brokers' EXTERNAL listeners
and their admin endpoints, and the spark profile's web UIs, given through the compose
file's variables. Faults go through scripts/docker-fault.sh, the script users run. Used
by the Docker tests and scripts/bench_docker.py; the repository checkout is where the
compose file and scripts are.

`secure=True` runs the secured variant (docker-compose.yml with docker-compose.secure.yml:
SASL_SSL on the EXTERNAL listener, mutual TLS between the brokers, ACLs on), with an admin
password and an admin endpoint token (`admin_token`) of its own; `client_security()` is
then the admin's client settings and `command_config()` a `--command-config` file with them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.zk import paths
from minikafka.zk.client import ZkClient
from minikafka.zk.server import pick_free_port

REPOSITORY = Path(__file__).resolve().parents[2]
BASE_IMAGE = "debian:bookworm-slim"
# The brokers `docker compose up` starts; GROW_BROKERS are those of the `grow` profile
# (docker-compose.yml's broker4), started only when named, to scale the cluster out.
BROKERS = (1, 2, 3)
GROW_PROFILE = "grow"
GROW_BROKERS = (4,)
ALL_BROKERS = (*BROKERS, *GROW_BROKERS)
# The Spark standalone cluster of the `spark` profile: a master and two workers, which
# share the volume SPARK_VOLUME; started only when the profile is on.
SPARK_PROFILE = "spark"
SPARK_SERVICES = ("spark-master", "spark-worker1", "spark-worker2")
SPARK_VOLUME = "spark-data"
SECURE_OVERRIDE = "docker-compose.secure.yml"
# Where docker-compose.secure.yml's `security` service leaves the host client's files.
SECURE_CLIENT_DIR = "/etc/minikafka/certs/client"
ADMIN_USER = "admin"


def _run(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def docker_problem(root: Path = REPOSITORY) -> str | None:
    """Why a compose cluster cannot run here, or None. Creates the base image with
    scripts/docker-base-image.sh when it is missing and this is root."""
    if shutil.which("docker") is None:
        return "no docker command on PATH"
    try:
        info = _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
        if info.returncode != 0:
            return f"the Docker engine does not answer: {info.stderr.strip()}"
        if _run(["docker", "compose", "version"], timeout=30).returncode != 0:
            return "`docker compose` (Compose v2, the CLI plugin) is missing"
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer within 30 s"
    if _run(["docker", "image", "inspect", BASE_IMAGE]).returncode != 0:
        if os.geteuid() != 0:
            return (
                f"no {BASE_IMAGE} image, and creating it (scripts/docker-base-image.sh) needs root"
            )
        made = _run([str(root / "scripts" / "docker-base-image.sh")], timeout=900)
        if made.returncode != 0:
            return f"scripts/docker-base-image.sh failed: {made.stderr.strip()[-2000:]}"
    return None


def wait_for(
    what: str, check: Callable[[], object], timeout: float, interval: float = 0.2
) -> float:
    """Poll until `check()` is truthy; the seconds it took. TimeoutError after `timeout`."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
    return time.monotonic() - start


class ComposeError(RuntimeError):
    pass


class ComposeCluster:
    def __init__(
        self,
        session_timeout_ms: int | None = None,
        *,
        name: str | None = None,
        root: Path = REPOSITORY,
        secure: bool = False,
    ) -> None:
        self.secure = secure
        prefix = "minikafka-secure-test" if secure else "minikafka-test"
        self.name = name or f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.root = root
        self.compose_file = root / "docker-compose.yml"
        self.compose_files = [self.compose_file]
        if secure:
            self.compose_files.append(root / SECURE_OVERRIDE)
        self.admin_password = f"admin-{uuid.uuid4().hex}" if secure else None
        # The secured variant's admin.listeners.token (the HTTP admin endpoints').
        self.admin_token = f"token-{uuid.uuid4().hex}" if secure else None
        self._client_dir: Path | None = None
        self.zookeeper_port = pick_free_port("127.0.0.1")
        # Every broker's, the grow profile's too: a fourth broker started in this project
        # must not take the compose file's default ports, which another project may hold.
        self.broker_ports = {b: pick_free_port("127.0.0.1") for b in ALL_BROKERS}
        self.admin_ports = {b: pick_free_port("127.0.0.1") for b in ALL_BROKERS}
        # The spark profile's published web UIs: the master's and a driver's application UI.
        self.spark_ui_port = pick_free_port("127.0.0.1")
        self.spark_app_ui_port = pick_free_port("127.0.0.1")
        self.env = {
            **os.environ,
            "COMPOSE_PROJECT_NAME": self.name,
            "MINIKAFKA_ZOOKEEPER_PORT": str(self.zookeeper_port),
            **{f"MINIKAFKA_BROKER{b}_PORT": str(p) for b, p in self.broker_ports.items()},
            **{f"MINIKAFKA_BROKER{b}_ADMIN_PORT": str(p) for b, p in self.admin_ports.items()},
            "MINIKAFKA_SPARK_UI_PORT": str(self.spark_ui_port),
            "MINIKAFKA_SPARK_APP_UI_PORT": str(self.spark_app_ui_port),
            # Compose's own variable, which scripts/docker-fault.sh honours too.
            "COMPOSE_FILE": os.pathsep.join(str(f) for f in self.compose_files),
        }
        if self.admin_password is not None:
            self.env["MINIKAFKA_ADMIN_PASSWORD"] = self.admin_password
        if self.admin_token is not None:
            self.env["MINIKAFKA_ADMIN_TOKEN"] = self.admin_token
        if session_timeout_ms is not None:
            self.env["MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS"] = str(session_timeout_ms)
        self._zk: ZkClient | None = None

    # --- compose ---------------------------------------------------------------------------

    def compose(self, *args: str, timeout: float = 900, check: bool = True) -> str:
        """`docker compose ARGS` for this project; its stdout (ComposeError if it fails)."""
        files = [arg for f in self.compose_files for arg in ("-f", str(f))]
        argv = ["docker", "compose", *files, "-p", self.name, *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and done.returncode != 0:
            raise ComposeError(
                f"`docker compose {' '.join(args)}` exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done.stdout

    def up(self, *extra: str) -> None:
        """`docker compose up -d --wait` (add --build for images of this checkout).

        An image a build took the name of is removed if no container uses it: compose labels
        what it builds with the project's name, so each project's build makes new images
        and would leave the previous ones dangling."""
        before = set(self.images().values()) if "--build" in extra else set()
        self.compose("up", "-d", "--wait", *extra)
        for image in before - set(self.images().values()):
            _run(["docker", "image", "rm", image])  # refused while a container uses it

    def build(self, service: str, *, profile: str) -> None:
        """`docker compose --profile PROFILE build SERVICE`: its image built from this
        checkout. The image its tag named before is removed if no container uses it, as
        `up` does after a build."""
        image = self.compose("--profile", profile, "config", "--images", service).strip()
        before = _run(["docker", "image", "inspect", "--format", "{{.Id}}", image])
        self.compose("--profile", profile, "build", service, timeout=1800)
        after = _run(["docker", "image", "inspect", "--format", "{{.Id}}", image])
        if before.returncode == 0 and before.stdout != after.stdout:
            _run(["docker", "image", "rm", before.stdout.strip()])  # refused while in use

    def images(self) -> dict[str, str]:
        """Image name -> id of the compose file's images that exist on the engine."""
        ids = {}
        for name in sorted(set(self.compose("config", "--images").split())):
            done = _run(["docker", "image", "inspect", "--format", "{{.Id}}", name])
            if done.returncode == 0:
                ids[name] = done.stdout.strip()
        return ids

    def built_images(self, *, dangling: bool = False) -> set[str]:
        """Ids of the images this project's builds made (compose labels them with it); with
        `dangling`, only those left without a name."""
        argv = ["docker", "image", "ls", "--quiet", "--no-trunc"]
        argv += ["--filter", f"label=com.docker.compose.project={self.name}"]
        if dangling:
            argv += ["--filter", "dangling=true"]
        return set(_run(argv).stdout.split())

    def container_image(self, service: str) -> str:
        """Id of the image the service's container runs."""
        out = _run(["docker", "inspect", "--format", "{{.Image}}", self.container(service)])
        return out.stdout.strip()

    def down(self, *extra: str) -> None:
        self.close_zk()
        self.compose("down", *extra, timeout=300)
        # Its images that another project's build has since taken the names of: no
        # container uses them any more.
        for image in self.built_images(dangling=True):
            _run(["docker", "image", "rm", image])

    def remove(self, service: str, *volumes: str) -> None:
        """The service's container stopped and removed, and the named volumes given (by the
        compose file's names) deleted: the project as if the service had never run."""
        self.compose("rm", "--stop", "--force", service, timeout=120)
        for volume in volumes:
            _run(["docker", "volume", "rm", "--force", f"{self.name}_{volume}"])

    def logs(self, service: str | None = None, tail: int = 200) -> str:
        args = ["logs", "--no-color", "--tail", str(tail)]
        return self.compose(*args, *([service] if service else []), check=False)

    def container(self, service: str) -> str:
        cid = self.compose("ps", "--all", "--quiet", service).strip().splitlines()
        if not cid:
            raise ComposeError(f"no container for {service} in project {self.name}")
        return cid[0]

    def state(self, service: str) -> Mapping[str, Any]:
        """`docker inspect`'s State of the service's container (Status, ExitCode, Health...)."""
        out = _run(["docker", "inspect", self.container(service)]).stdout
        state: Mapping[str, Any] = json.loads(out)[0]["State"]
        return state

    def volumes(self) -> list[str]:
        label = f"label=com.docker.compose.project={self.name}"
        out = _run(["docker", "volume", "ls", "--quiet", "--filter", label]).stdout
        return sorted(out.split())

    def fault(self, op: str, target: int | str) -> str:
        """scripts/docker-fault.sh OP TARGET for this project; the state it prints."""
        script = self.root / "scripts" / "docker-fault.sh"
        done = subprocess.run(
            [str(script), op, str(target)],
            capture_output=True,
            text=True,
            timeout=300,
            env=self.env,
        )
        if done.returncode != 0:
            raise ComposeError(f"docker-fault.sh {op} {target}: {done.stderr}")
        return done.stdout.strip()

    # --- addresses -------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """The brokers `up` starts (a grow broker may be down: it is no bootstrap server)."""
        return ",".join(f"localhost:{self.broker_ports[b]}" for b in BROKERS)

    def bootstrap_without(self, broker: int) -> str:
        return ",".join(f"localhost:{self.broker_ports[b]}" for b in BROKERS if b != broker)

    @property
    def zookeeper_connect(self) -> str:
        return f"127.0.0.1:{self.zookeeper_port}"

    # --- the secured variant's clients ------------------------------------------------------

    def client_files(self, directory: Path) -> Path:
        """The host client's files the `security` service wrote (ca.pem, client.properties),
        copied out of the project with `docker compose cp` into `directory` (made); the
        directory they are in."""
        if not self.secure:
            raise ComposeError("a plaintext project has no client files")
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / "minikafka-client"
        self.compose("cp", f"security:{SECURE_CLIENT_DIR}", str(target), timeout=120)
        self._client_dir = target
        return target

    def client_security(self) -> dict[str, str]:
        """librdkafka's settings for the admin user over SASL_SSL (after `client_files`);
        none for the plaintext variant."""
        if not self.secure:
            return {}
        if self._client_dir is None or self.admin_password is None:
            raise ComposeError("call client_files() on a secure project first")
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": ADMIN_USER,
            "sasl.password": self.admin_password,
            "ssl.ca.location": str(self._client_dir / "ca.pem"),
        }

    def command_config(self, path: Path) -> Path:
        """A `--command-config` file (Kafka's names) for the admin user over SASL_SSL,
        with the CA's absolute path."""
        security = self.client_security()
        path.write_text(
            f"bootstrap.servers={self.bootstrap_servers}\n"
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="{ADMIN_USER}" password="{security["sasl.password"]}";\n'
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={security['ssl.ca.location']}\n"
        )
        path.chmod(0o600)
        return path

    # --- ZooKeeper's view ------------------------------------------------------------------

    def zk(self) -> ZkClient:
        if self._zk is None:
            self._zk = ZkClient(self.zookeeper_connect, session_timeout_ms=30000)
            self._zk.start()
        return self._zk

    def close_zk(self) -> None:
        if self._zk is not None:
            self._zk.close()
            self._zk = None

    def partition_state(self, topic: str, partition: int) -> LeaderAndIsr | None:
        return self.zk().get_partition_state(TopicPartition(topic, partition))

    def partition_state_mtime_ms(self, topic: str, partition: int) -> int:
        """When the partition's state znode was last written (ZooKeeper's clock)."""
        stat = self.zk().stat(paths.partition_state(topic, partition))
        if stat is None:
            raise ComposeError(f"no state znode for {topic}-{partition}")
        return int(stat.mtime)

    def controller(self) -> int | None:
        return self.zk().get_controller_id()
