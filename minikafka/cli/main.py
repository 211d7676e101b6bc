"""The `minikafka` command: one group, subcommands modelled on Kafka's tools."""

from __future__ import annotations

import logging

import click

from minikafka import __version__
from minikafka.cli.acls import acls
from minikafka.cli.broker import broker
from minikafka.cli.certs import certs
from minikafka.cli.chaos import chaos
from minikafka.cli.cluster import cluster
from minikafka.cli.configs import configs
from minikafka.cli.consume import consume
from minikafka.cli.consumer_groups import consumer_groups
from minikafka.cli.delete_records import delete_records_command
from minikafka.cli.dump_log import dump_log
from minikafka.cli.leader_election import leader_election
from minikafka.cli.log_dirs import log_dirs
from minikafka.cli.perf import perf
from minikafka.cli.pipeline import pipeline
from minikafka.cli.produce import produce
from minikafka.cli.reassign_partitions import reassign_partitions
from minikafka.cli.replicas import replicas
from minikafka.cli.storage_demo import storage
from minikafka.cli.topics import topics


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="minikafka")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """minikafka: Kafka's replicated log, rebuilt in Python."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not verbose:
        # kazoo warns of every dropped connection and reconnect (ZooKeeper stopping under a
        # command, a broker restarted): the commands say themselves what failed.
        logging.getLogger("kazoo").setLevel(logging.ERROR)


cli.add_command(broker)
cli.add_command(cluster)
cli.add_command(dump_log)
cli.add_command(storage)
cli.add_command(topics)
cli.add_command(produce)
cli.add_command(consume)
cli.add_command(consumer_groups)
cli.add_command(configs)
cli.add_command(delete_records_command)
cli.add_command(log_dirs)
cli.add_command(acls)
cli.add_command(replicas)
cli.add_command(reassign_partitions)
cli.add_command(leader_election)
cli.add_command(chaos)
cli.add_command(perf)
cli.add_command(pipeline)
cli.add_command(certs)


def _full_short_help(command: click.Command) -> None:
    """Command lists show each command's whole first sentence (click cuts it at 45
    characters with "..."); the formatter wraps it instead."""
    if command.short_help is None and command.help:
        first = command.help.split("\n\n")[0]
        command.short_help = " ".join(first.split())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _full_short_help(sub)


_full_short_help(cli)


def main() -> None:
    cli()
