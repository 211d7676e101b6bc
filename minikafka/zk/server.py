"""Start and stop a real, standalone ZooKeeper server from Debian's `zookeeper` package.

Used by the test fixtures and by `minikafka cluster up`. We run the JVM directly rather
than through `zkServer.sh`: Debian's script reads `/etc/zookeeper/conf/environment`, whose
log settings point at `/var/log/zookeeper`, and `start-foreground` gives us no control over
the log file. The command line is the one `zkServer.sh start-foreground` builds:
`java -cp <conf>:zookeeper.jar QuorumPeerMain <zoo.cfg>` (the jar's manifest lists its
dependencies), plus slf4j's log4j binding so the server logs to `<dir>/zookeeper.log`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

log = logging.getLogger(__name__)

DEFAULT_INSTALL_DIR = Path("/usr/share/zookeeper")
DEFAULT_JAVA_LIB_DIR = Path("/usr/share/java")
DEFAULT_PORT = 2181
# ZooKeeper's own default heap (zkEnv.sh's ZK_SERVER_HEAP, in MB). The tree of 100,000
# partitions (two znodes each, with their watches) outgrows 256 MB: the old generation fills,
# every collection is a full one, and the pauses expire every session.
DEFAULT_HEAP_MB = 1000
HEAP_ENV = "ZK_SERVER_HEAP"


def heap_mb_from_environment(environ: Mapping[str, str] = os.environ) -> int:
    """The heap ZooKeeper's scripts would give the server: $ZK_SERVER_HEAP (MB) if set,
    else their default. A value that is not a positive whole number of MB is refused."""
    raw = environ.get(HEAP_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_HEAP_MB
    try:
        heap = int(raw)
    except ValueError:
        heap = 0
    if heap <= 0:
        raise ValueError(f"{HEAP_ENV}={raw!r}: ZooKeeper's heap is a positive number of MB")
    return heap


MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

# ZooKeeper's SASL: the server's login module for DIGEST-MD5 and the authentication
# provider that turns a SASL login into the `sasl:<user>` identity ACLs name.
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
SASL_AUTH_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
# TLS (ZooKeeper 3.5+): Netty's connection factory serves secureClientPort, and the x509
# provider makes a client certificate's subject an identity (`x509:<subject>` in ACLs).
NETTY_SERVER_CNXN_FACTORY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
X509_AUTH_PROVIDER = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
# Netty's codec, which NettyServerCnxnFactory needs and Debian's zookeeper.jar manifest
# leaves off its class path (the other Netty jars are on it).
_TLS_JARS = ("netty-codec.jar",)

# Debian ships no slf4j binding on zookeeper.jar's manifest class path, so without these
# the server would log nothing at all ("SLF4J: Defaulting to no-operation logger").
_LOG_JARS = ("slf4j-log4j12.jar", "log4j-1.2.jar")


def _jaas_quote(value: str) -> str:
    # Java's StreamTokenizer reads backslash escapes inside quotes.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_server_jaas(path: Path, users: Mapping[str, str]) -> None:
    """A JAAS file whose `Server` section lets `users` (name -> password) log in to
    ZooKeeper with SASL DIGEST-MD5; readable by its owner only (it holds the passwords)."""
    options = " ".join(f"user_{name}={_jaas_quote(pw)}" for name, pw in users.items())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(f"Server {{\n  {DIGEST_LOGIN_MODULE} required {options};\n}};\n")


def write_client_jaas(path: Path, username: str, password: str) -> None:
    """A JAAS file whose `Client` section logs a ZooKeeper client (a broker, a tool) in
    with SASL DIGEST-MD5, as Kafka's `-Djava.security.auth.login.config` names it; readable
    by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(
        f"Client {{\n  {DIGEST_LOGIN_MODULE} required\n  username={_jaas_quote(username)} "
        f"password={_jaas_quote(password)};\n}};\n"
    )


class ZooKeeperNotInstalledError(RuntimeError):
    """Debian's zookeeper package (or Java) is missing."""


class ZooKeeperStartError(RuntimeError):
    """The server process exited or did not answer in time; the message has its log tail."""


def pick_free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just considered free (another process may still take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command (`ruok`, `srvr`, `mntr`, ...) and return the reply."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        s.shutdown(socket.SHUT_WR)
        chunks: list[bytes] = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class LocalZooKeeper:
    """A standalone ZooKeeper server process with its own config, data and log in `base_dir`.

    `port=0` picks a free port at the first `start()` (and keeps it across restarts, so
    clients can reconnect). Files: `conf/zoo.cfg`, `conf/log4j.properties`, `data/`,
    `zookeeper.log` (the server's log), `zookeeper.out` (JVM stdout/stderr),
    `zookeeper.pid`.

    `tls`: (keystore, truststore), PEM files: the server also serves TLS on
    `secure_port` (0: a free one, kept across restarts), where every client must present a
    certificate the truststore's CAs signed (`ssl.clientAuth=need`).

    `server_jaas`: a JAAS file with a `Server` section (`write_server_jaas`): the server then
    accepts SASL DIGEST-MD5 logins from its users, whose znodes' ACLs can name them
    (`sasl:<user>`). Clients that do not log in still connect, and may do what the ACLs
    allow anyone (Kafka's brokers with zookeeper.set.acl: read, outside the sensitive paths).
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        port: int = DEFAULT_PORT,
        *,
        host: str = "127.0.0.1",
        tick_time_ms: int = 500,
        min_session_timeout_ms: int = 1000,
        max_session_timeout_ms: int = 60000,
        fsync: bool = True,
        heap_mb: int | None = None,
        install_dir: str | os.PathLike[str] = DEFAULT_INSTALL_DIR,
        java_lib_dir: str | os.PathLike[str] = DEFAULT_JAVA_LIB_DIR,
        java: str = "java",
        server_jaas: str | os.PathLike[str] | None = None,
        tls: tuple[Path, Path] | None = None,
        secure_port: int = 0,
    ) -> None:
        self.base_dir = Path(base_dir).absolute()
        self.server_jaas = None if server_jaas is None else Path(server_jaas).absolute()
        self.tls = tls
        self._secure_port = secure_port
        self._pick_secure_port = secure_port == 0
        self.host = host
        self._port = port
        self._pick_port = port == 0
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.fsync = fsync
        self.heap_mb = heap_mb_from_environment() if heap_mb is None else heap_mb
        self.install_dir = Path(install_dir)
        self.java_lib_dir = Path(java_lib_dir)
        self.java = java
        self._proc: subprocess.Popen[bytes] | None = None

    # --- files -------------------------------------------------------------------------

    @property
    def conf_dir(self) -> Path:
        return self.base_dir / "conf"

    @property
    def config_path(self) -> Path:
        return self.conf_dir / "zoo.cfg"

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "zookeeper.log"

    @property
    def out_path(self) -> Path:
        return self.base_dir / "zookeeper.out"

    @property
    def pid_path(self) -> Path:
        return self.base_dir / "zookeeper.pid"

    @property
    def port(self) -> int:
        return self._port

    @property
    def secure_port(self) -> int:
        return self._secure_port

    @property
    def secure_connect_string(self) -> str:
        """`zookeeper.connect` of the TLS port (with `tls` only)."""
        return f"{self.host}:{self._secure_port}"

    @property
    def connect_string(self) -> str:
        """Kafka's `zookeeper.connect` for this server (append `/chroot` as needed)."""
        return f"{self.host}:{self._port}"

    @property
    def pid(self) -> int | None:
        if self._proc is not None:
            return self._proc.pid
        return self._read_pid_file()

    # --- lifecycle ---------------------------------------------------------------------

    def check_installed(self) -> list[str]:
        """The JVM class path, or a clear error naming what is missing."""
        script = self.install_dir / "bin" / "zkServer.sh"
        if not script.is_file():
            raise ZooKeeperNotInstalledError(
                f"ZooKeeper is not installed: {script} not found. Install Debian's package "
                "with `apt-get install zookeeper` (as root)."
            )
        server_jar = self.java_lib_dir / "zookeeper.jar"
        if not server_jar.is_file():
            raise ZooKeeperNotInstalledError(
                f"{server_jar} not found although {script} exists; reinstall Debian's "
                "package with `apt-get install --reinstall zookeeper libzookeeper-java`."
            )
        classpath = [str(self.conf_dir), str(server_jar)]
        classpath += [str(p) for p in (self.java_lib_dir / j for j in _LOG_JARS) if p.is_file()]
        if self.tls is not None:
            for jar in (self.java_lib_dir / j for j in _TLS_JARS):
                if not jar.is_file():
                    raise ZooKeeperNotInstalledError(
                        f"{jar} not found: ZooKeeper's TLS (Netty) needs it; install Debian's "
                        "package with `apt-get install libnetty-java`."
                    )
                classpath.append(str(jar))
        return classpath

    def start(self, timeout: float = 30.0) -> None:
        """Start the server and return once it serves requests; raises with its log tail."""
        if self.is_running():
            raise ZooKeeperStartError(
                f"ZooKeeper in {self.base_dir} is already running (pid {self.pid})"
            )
        classpath = self.check_installed()
        deadline = time.monotonic() + timeout
        # A picked port can be taken between our probe and the JVM's bind: pick again.
        for attempt in range(3):
            if self._pick_port and (attempt > 0 or self._port == 0):
                self._port = pick_free_port(self.host)
            if (
                self.tls is not None
                and self._pick_secure_port
                and (attempt > 0 or self._secure_port == 0)
            ):
                self._secure_port = pick_free_port(self.host)
            self._write_config()
            self._spawn(classpath)
            try:
                self._await_serving(deadline)
                return
            except ZooKeeperStartError as e:
                self._reap()
                if self._pick_port and "Address already in use" in str(e) and attempt < 2:
                    log.warning("ZooKeeper port %d was taken; retrying on another", self._port)
                    continue
                raise
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
        pid = self._live_pid()
        if pid is None:
            self._reap()
            return
        self._signal(pid, signal.SIGTERM)
        if not self._wait_exit(pid, timeout):
            log.warning("ZooKeeper pid %d ignored SIGTERM for %.1fs; killing it", pid, timeout)
            self._signal(pid, signal.SIGKILL)
            self._wait_exit(pid, 10.0)
        self._reap()

    def kill(self) -> None:
        """SIGKILL, as a crash would (data written so far stays in `data/`)."""
        pid = self._live_pid()
        if pid is not None:
            self._signal(pid, signal.SIGKILL)
            self._wait_exit(pid, 10.0)
        self._reap()

    def is_running(self) -> bool:
        return self._live_pid() is not None

    def ruok(self, timeout: float = 2.0) -> bool:
        try:
            return four_letter_word(self.host, self._port, "ruok", timeout) == "imok"
        except OSError:
            return False

    def __enter__(self) -> LocalZooKeeper:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- internals ---------------------------------------------------------------------

    def _write_config(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_time_ms}",
            f"dataDir={self.data_dir}",
            f"clientPort={self._port}",
            f"clientPortAddress={self.host}",
            f"minSessionTimeout={self.min_session_timeout_ms}",
            f"maxSessionTimeout={self.max_session_timeout_ms}",
            # Every broker and test client connects from 127.0.0.1; the default cap is 60.
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            f"forceSync={'yes' if self.fsync else 'no'}",
            # 64 MiB transaction-log preallocation is wasteful for a local server.
            "preAllocSize=4096",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
        ]
        if self.server_jaas is not None:
            lines.append(f"authProvider.sasl={SASL_AUTH_PROVIDER}")
        if self.tls is not None:
            keystore, truststore = self.tls
            lines += [
                f"secureClientPort={self._secure_port}",
                f"secureClientPortAddress={self.host}",
                f"serverCnxnFactory={NETTY_SERVER_CNXN_FACTORY}",
                f"ssl.keyStore.location={keystore}",
                "ssl.keyStore.type=PEM",
                f"ssl.trustStore.location={truststore}",
                "ssl.trustStore.type=PEM",
                "ssl.clientAuth=need",
                f"authProvider.x509={X509_AUTH_PROVIDER}",
            ]
        self.config_path.write_text("\n".join(lines) + "\n")
        (self.conf_dir / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, FILE\n"
            "log4j.appender.FILE=org.apache.log4j.FileAppender\n"
            f"log4j.appender.FILE.File={self.log_path}\n"
            "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.FILE.layout.ConversionPattern="
            "%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n\n"
        )

    def _spawn(self, classpath: list[str]) -> None:
        cmd = [
            self.java,
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{self.conf_dir / 'log4j.properties'}",
            f"-Dzookeeper.log.dir={self.base_dir}",
            "-Dzookeeper.jmx.log4j.disable=true",
            *(
                [f"-Djava.security.auth.login.config={self.server_jaas}"]
                if self.server_jaas is not None
                else []
            ),
            "-cp",
            ":".join(classpath),
            MAIN_CLASS,
            str(self.config_path),
        ]
        with open(self.out_path, "ab") as out:
            try:
                # Its own session: a Ctrl-C aimed at `minikafka cluster up` or pytest must
                # not kill the server behind our back; stop() does that.
                self._proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                )
            except FileNotFoundError as e:
                raise ZooKeeperNotInstalledError(
                    f"cannot run {self.java!r} ({e}); ZooKeeper needs Java: "
                    "`apt-get install zookeeper` pulls in default-jre."
                ) from e
        self.pid_path.write_text(f"{self._proc.pid}\n")
        log.info("started ZooKeeper pid %d on %s", self._proc.pid, self.connect_string)

    def _await_serving(self, deadline: float) -> None:
        assert self._proc is not None
        while True:
            # The poll interval doubles as the exit check.
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self._proc.wait(timeout=0.05)
                raise ZooKeeperStartError(
                    f"ZooKeeper exited with code {code} while starting on "
                    f"{self.connect_string}.\n{self._log_tail()}"
                )
            if self._serving():
                return
            if time.monotonic() >= deadline:
                pid = self._proc.pid
                self.kill()
                raise ZooKeeperStartError(
                    f"ZooKeeper (pid {pid}) did not answer on {self.connect_string} in "
                    f"time.\n{self._log_tail()}"
                )

    def _serving(self) -> bool:
        # `ruok` only says some process is up. `conf` answers once the ZooKeeperServer serves
        # requests, and its dataDir tells us it is *our* server: another one already bound to
        # a fixed port would otherwise pass for ours while our JVM dies of "address in use".
        try:
            if four_letter_word(self.host, self._port, "ruok", 1.0) != "imok":
                return False
            conf = four_letter_word(self.host, self._port, "conf", 1.0)
        except OSError:
            return False
        ours = {f"dataDir={d}/version-2" for d in (self.data_dir, self.data_dir.resolve())}
        return any(line.strip() in ours for line in conf.splitlines())

    def _log_tail(self, lines: int = 30) -> str:
        parts = []
        for path in (self.out_path, self.log_path):
            try:
                text = path.read_text(errors="replace").splitlines()[-lines:]
            except FileNotFoundError:
                continue
            if text:
                parts.append(f"--- last lines of {path} ---\n" + "\n".join(text))
        return "\n".join(parts) or f"(no output in {self.out_path} or {self.log_path})"

    def _read_pid_file(self) -> int | None:
        try:
            return int(self.pid_path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _live_pid(self) -> int | None:
        """Our server's pid if it is alive: our child, or one recorded in the pid file by an
        earlier `cluster up` (checked against /proc so a recycled pid is never signalled)."""
        if self._proc is not None:
            return self._proc.pid if self._proc.poll() is None else None
        pid = self._read_pid_file()
        if pid is None:
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        if MAIN_CLASS.encode() in cmdline and str(self.config_path).encode() in cmdline:
            return pid
        return None

    def _signal(self, pid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        if self._proc is not None:
            try:
                self._proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        # Not our child (started by another process): poll until the pid is gone.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._live_pid() is None:
                return True
            time.sleep(0.05)
        return self._live_pid() is None

    def _reap(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None
        if self._proc is None and self._live_pid() is None:
            with contextlib.suppress(FileNotFoundError):
                self.pid_path.unlink()
