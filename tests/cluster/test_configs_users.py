"""`minikafka configs --entity-type users` against a real plaintext cluster: KIP-554's
AlterUserScramCredentials and DescribeUserScramCredentials as Kafka 2.8's brokers answer them
(credentials kept in ZooKeeper's /config/users/<user> as Kafka keeps them), with
kafka-configs.sh's output, the command run as a user runs it."""

from __future__ import annotations

import json
from subprocess import CompletedProcess

import pytest
from kazoo.client import KazooClient

from minikafka.cluster import LocalCluster
from minikafka.security.scram import ScramCredential, ScramMechanism, make_credential
from tests.cluster.helpers import bootstrap, run_cli

pytestmark = pytest.mark.timeout(180)


def configs(cluster: LocalCluster, *args: str) -> CompletedProcess[str]:
    return run_cli("configs", "--bootstrap-server", bootstrap(cluster), *args)


def ok(result: CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout


def stored_credentials(cluster: LocalCluster, user: str) -> dict[str, ScramCredential]:
    """The user's credentials as the brokers keep them: /config/users/<user>, Kafka's entity
    config JSON of `SCRAM-SHA-256=salt=...,stored_key=...,server_key=...,iterations=...`."""
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=30)
    try:
        data, _ = zk.get(f"/config/users/{user}")
    finally:
        zk.stop()
        zk.close()
    config = json.loads(data)["config"]
    return {name: ScramCredential.from_zk(value) for name, value in config.items()}


def test_add_describe_change_and_delete_scram_credentials(cluster: LocalCluster) -> None:
    alice = ["--entity-type", "users", "--entity-name", "alice"]
    added = configs(
        cluster,
        *alice,
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
        "SCRAM-SHA-512=[password=alice-secret]",
    )
    assert ok(added) == "Completed updating config for user alice.\n"
    assert ok(configs(cluster, *alice, "--describe")) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    # What the brokers keep is the password's: the keys derive from it with the stored salt.
    stored = stored_credentials(cluster, "alice")
    assert set(stored) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    for name, credential in stored.items():
        assert credential == make_credential(
            ScramMechanism.from_name(name),
            "alice-secret",
            salt=credential.salt,
            iterations=credential.iterations,
        )

    # New iterations (and password) for one mechanism, through --user.
    changed = configs(
        cluster,
        "--user",
        "alice",
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[iterations=16384,password=alice-new-secret]",
    )
    assert ok(changed) == "Completed updating config for user alice.\n"
    assert ok(configs(cluster, *alice, "--describe")) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=16384\n"
    )

    deleted = configs(cluster, *alice, "--alter", "--delete-config", "SCRAM-SHA-256")
    assert ok(deleted) == "Completed updating config for user alice.\n"
    assert ok(configs(cluster, "--user", "alice", "--describe")) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=16384\n"
    )
    assert set(stored_credentials(cluster, "alice")) == {"SCRAM-SHA-512"}

    # A credential that is not there: the broker's RESOURCE_NOT_FOUND, one line, status 1.
    missing = configs(cluster, *alice, "--alter", "--delete-config", "SCRAM-SHA-256")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith(
        "Error while executing config command : RESOURCE_NOT_FOUND: "
    ), missing.stderr
    assert missing.stderr.count("\n") == 1
    # An iteration count Kafka's brokers refuse never reaches them (kafka-configs.sh's check
    # of the minimum; the maximum is minikafka's, before UNACCEPTABLE_CREDENTIAL).
    too_many = configs(
        cluster, *alice, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=20000,password=x]"
    )
    assert too_many.returncode == 2 and "more than the maximum 16384" in too_many.stderr

    # Every user with credentials, in the broker's order (Kafka's: by name).
    bob = configs(
        cluster, "--user", "bob", "--alter", "--add-config", "SCRAM-SHA-256=[password=bob-secret]"
    )
    assert ok(bob) == "Completed updating config for user bob.\n"
    assert ok(configs(cluster, "--entity-type", "users", "--describe")) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=16384\n"
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096\n"
    )
    # A user without credentials, named: nothing, as kafka-configs.sh prints nothing for one.
    assert ok(configs(cluster, "--user", "carol", "--describe")) == ""

    # The last credential deleted: the user has none left, and is no longer listed.
    ok(configs(cluster, "--user", "bob", "--alter", "--delete-config", "SCRAM-SHA-256"))
    assert ok(configs(cluster, "--entity-type", "users", "--describe")) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=16384\n"
    )


def test_zookeeper_writes_credentials_without_a_broker(cluster: LocalCluster) -> None:
    """`--zookeeper` (kafka-configs.sh --zookeeper): the credentials go straight to
    /config/users, where the brokers find them (how docker-compose.secure.yml makes its admin
    before the brokers start); an existing mechanism is kept, a deleted one goes."""
    bob = ["--entity-type", "users", "--entity-name", "bob", "--alter"]
    zookeeper = ["--zookeeper", cluster.zookeeper_connect]
    added = run_cli(
        "configs",
        *zookeeper,
        *bob,
        "--add-config",
        "SCRAM-SHA-256=[password=bob-secret],SCRAM-SHA-512=[iterations=8192,password=bob-secret]",
    )
    assert ok(added) == "Completed updating config for user bob.\n"
    stored = stored_credentials(cluster, "bob")
    assert {name: c.iterations for name, c in stored.items()} == {
        "SCRAM-SHA-256": 4096,
        "SCRAM-SHA-512": 8192,
    }
    for name, credential in stored.items():
        assert credential == make_credential(
            ScramMechanism.from_name(name),
            "bob-secret",
            salt=credential.salt,
            iterations=credential.iterations,
        )
    deleted = run_cli("configs", *zookeeper, *bob, "--delete-config", "SCRAM-SHA-256")
    assert ok(deleted) == "Completed updating config for user bob.\n"
    assert set(stored_credentials(cluster, "bob")) == {"SCRAM-SHA-512"}
    # The brokers read what was written.
    assert ok(configs(cluster, "--user", "bob", "--describe")) == (
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=8192\n"
    )
    # One of --bootstrap-server and --zookeeper; --zookeeper only alters.
    both = run_cli(
        "configs",
        *zookeeper,
        "--bootstrap-server",
        bootstrap(cluster),
        *bob,
        "--delete-config",
        "SCRAM-SHA-512",
    )
    assert both.returncode == 2 and "not both" in both.stderr
    described = run_cli("configs", *zookeeper, "--user", "bob", "--describe")
    assert described.returncode == 2 and "--zookeeper goes with --alter" in described.stderr
