"""Install Debian's `zookeeper` package when `minikafka cluster up` needs it and can.

A newcomer's first command should work on a fresh Debian machine, so `cluster up` runs
`apt-get install -y zookeeper` itself when the package is missing, as root with apt-get
present (the package brings Java with it). Where it cannot (not root, no apt-get) the
error says exactly what to run. The decision is `plan_install`, a pure function.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from minikafka.zk.server import DEFAULT_INSTALL_DIR, ZooKeeperNotInstalledError

PACKAGE = "zookeeper"
INSTALL_COMMAND = f"apt-get install -y {PACKAGE}"
_APT_ENV = {"DEBIAN_FRONTEND": "noninteractive"}


def is_installed(install_dir: Path = DEFAULT_INSTALL_DIR) -> bool:
    return (install_dir / "bin" / "zkServer.sh").is_file()


def plan_install(install_dir: Path, *, euid: int, apt_get: str | None) -> list[list[str]]:
    """The commands that install the package, or ZooKeeperNotInstalledError saying why
    minikafka cannot run them and what the user should do instead."""
    missing = f"ZooKeeper is not installed ({install_dir / 'bin' / 'zkServer.sh'} not found)"
    if apt_get is None:
        raise ZooKeeperNotInstalledError(
            f"{missing}, and this system has no apt-get to install it with. minikafka runs "
            f"Debian's `{PACKAGE}` package (its files in {install_dir} and "
            "/usr/share/java/zookeeper.jar); on Debian or Ubuntu, "
            f"`{INSTALL_COMMAND}` as root provides it."
        )
    if euid != 0:
        raise ZooKeeperNotInstalledError(
            f"{missing}. Installing it needs root: run `sudo {INSTALL_COMMAND}` "
            "(or run this command as root, and it installs it), then start again."
        )
    return [[apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", PACKAGE]]


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _run(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(cmd),
        env={**os.environ, **_APT_ENV},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def ensure_installed(
    install_dir: Path = DEFAULT_INSTALL_DIR,
    *,
    progress: Callable[[str], None] = lambda _: None,
    run: Runner = _run,
    euid: int | None = None,
    apt_get: str | bool | None = True,
) -> bool:
    """Install the package if it is missing; True if it did. `euid` and `apt_get` default
    to this process's effective uid and the apt-get on PATH (tests pass their own)."""
    if is_installed(install_dir):
        return False
    apt = shutil.which("apt-get") if apt_get is True else (apt_get or None)
    commands = plan_install(install_dir, euid=os.geteuid() if euid is None else euid, apt_get=apt)
    progress(f"ZooKeeper is not installed: installing Debian's package (`{INSTALL_COMMAND}`)…")
    for cmd in commands:
        done = run(cmd)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise ZooKeeperNotInstalledError(
                f"`{' '.join(cmd)}` failed with exit code {done.returncode}; install the "
                f"package yourself (`{INSTALL_COMMAND}`) and start again.\n{tail}"
            )
    if not is_installed(install_dir):
        raise ZooKeeperNotInstalledError(
            f"`{INSTALL_COMMAND}` succeeded but {install_dir / 'bin' / 'zkServer.sh'} is still "
            "missing: this package does not have Debian's layout."
        )
    return True
