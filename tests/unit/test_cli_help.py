"""Command lists in `--help` show each command's whole summary, not one cut at 45
characters with "..."."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli

GROUPS = [name for name, c in cli.commands.items() if isinstance(c, click.Group)]


@pytest.mark.parametrize("group", [None, *GROUPS])
def test_command_summaries_are_not_cut(group: str | None) -> None:
    result = CliRunner().invoke(cli, [*([group] if group else []), "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    commands = result.output.split("Commands:", 1)[1]
    assert "..." not in commands, commands
    # Each summary is the first paragraph of the command's help, whitespace folded.
    command = cli if group is None else cli.commands[group]
    assert isinstance(command, click.Group)
    for sub in command.commands.values():
        first_words = " ".join((sub.help or "").split()[:3])
        assert first_words in " ".join(commands.split()), sub.name
