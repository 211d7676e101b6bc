"""`cluster up` installs Debian's zookeeper package when it is missing and it can (root,
apt-get), and otherwise says what to run. The decision and the error paths, with a fake
runner in place of apt-get (a real install is what a fresh machine's first `cluster up`
does; CI's machine has the package already)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from minikafka.zk.install import INSTALL_COMMAND, ensure_installed, plan_install
from minikafka.zk.server import ZooKeeperNotInstalledError


def test_root_with_apt_get_plans_update_then_install(tmp_path: Path) -> None:
    assert plan_install(tmp_path, euid=0, apt_get="/usr/bin/apt-get") == [
        ["/usr/bin/apt-get", "update", "-qq"],
        ["/usr/bin/apt-get", "install", "-y", "-qq", "zookeeper"],
    ]


def test_not_root_is_told_to_use_sudo(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotInstalledError) as e:
        plan_install(tmp_path, euid=1000, apt_get="/usr/bin/apt-get")
    assert f"sudo {INSTALL_COMMAND}" in str(e.value)
    assert str(tmp_path / "bin" / "zkServer.sh") in str(e.value)


def test_no_apt_get_names_the_package_layout_needed(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotInstalledError) as e:
        plan_install(tmp_path, euid=0, apt_get=None)
    assert "no apt-get" in str(e.value) and str(tmp_path) in str(e.value)


class FakeApt:
    """Records the commands; `install` creates the script as the package would."""

    def __init__(self, install_dir: Path, *, fail: str | None = None, creates: bool = True):
        self.install_dir, self.fail, self.creates = install_dir, fail, creates
        self.commands: list[list[str]] = []

    def __call__(self, cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.commands.append(list(cmd))
        if self.fail is not None and self.fail in cmd:
            return subprocess.CompletedProcess(cmd, 100, "", "E: Unable to locate package\n")
        if "install" in cmd and self.creates:
            (self.install_dir / "bin").mkdir(parents=True)
            (self.install_dir / "bin" / "zkServer.sh").write_text("#!/bin/sh\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")


def test_missing_package_is_installed_as_root(tmp_path: Path) -> None:
    apt, said = FakeApt(tmp_path), []
    assert ensure_installed(tmp_path, progress=said.append, run=apt, euid=0, apt_get="apt-get")
    assert [c[1] for c in apt.commands] == ["update", "install"]
    assert (tmp_path / "bin" / "zkServer.sh").is_file()
    assert said and INSTALL_COMMAND in said[0]


def test_an_installed_package_runs_nothing(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "zkServer.sh").write_text("")
    apt = FakeApt(tmp_path)
    assert not ensure_installed(tmp_path, run=apt, euid=1000, apt_get=None)
    assert apt.commands == []


def test_a_failed_apt_get_says_so_with_its_output(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotInstalledError) as e:
        ensure_installed(tmp_path, run=FakeApt(tmp_path, fail="install"), euid=0, apt_get="apt-get")
    assert "exit code 100" in str(e.value) and "Unable to locate package" in str(e.value)


def test_a_package_without_debians_layout_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperNotInstalledError, match="still missing"):
        ensure_installed(tmp_path, run=FakeApt(tmp_path, creates=False), euid=0, apt_get="apt-get")
