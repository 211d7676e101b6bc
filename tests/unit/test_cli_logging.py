"""The `minikafka` command's logging: kazoo's connection warnings stay out of a user's
terminal unless -v asks for more."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli


@pytest.fixture(autouse=True)
def restore_kazoo_level() -> Iterator[None]:
    kazoo = logging.getLogger("kazoo")
    level = kazoo.level
    yield
    kazoo.setLevel(level)


@pytest.mark.parametrize(("args", "level"), [([], logging.ERROR), (["-v"], logging.NOTSET)])
def test_kazoo_warnings_are_quiet_unless_verbose(args: list[str], level: int) -> None:
    logging.getLogger("kazoo").setLevel(logging.NOTSET)
    result = CliRunner().invoke(cli, [*args, "topics", "--help"])
    assert result.exit_code == 0, result.output
    assert logging.getLogger("kazoo").level == level
