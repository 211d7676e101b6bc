"""`minikafka acls` against real secured clusters, run as a user runs it (a subprocess, the
admin's client settings in a `--command-config` file): a SASL_SSL cluster with Kafka's
AclAuthorizer and the admin as super user, where ACLs are added, listed with
kafka-acls.sh's output, kept in ZooKeeper where Kafka keeps them and removed; a principal
without permission on the cluster is refused; and a cluster without an authorizer answers
SECURITY_DISABLED. The command's own logic is tested against a stand-in broker in
tests/unit/test_acls_cli.py."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from minikafka.cluster import LocalCluster
from minikafka.security.acl_zk import acl_path, decode_acls
from minikafka.security.acls import AccessControlEntry, ResourcePattern
from minikafka.security.operations import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.cluster.conftest import started_cluster
from tests.cluster.helpers import bootstrap, run_cli

pytestmark = pytest.mark.timeout(300)

# Kafka's authorizer; the cluster's admin (cluster/security.py's ADMIN_USER, whose SCRAM
# credentials the brokers use between themselves too) may do everything.
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin",
}
ALICE_PASSWORD = "alice-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(
        tmp_path_factory.mktemp("acls"), overrides=AUTHORIZER, security="sasl_ssl"
    ) as c:
        yield c


def write_properties(path: Path, settings: Mapping[str, str]) -> Path:
    """A client properties file (Java properties syntax) of librdkafka's settings."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\")

    path.write_text("".join(f"{k}={escape(v)}\n" for k, v in settings.items()))
    return path


@pytest.fixture(scope="module")
def admin_config(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_properties(
        tmp_path_factory.mktemp("admin") / "admin.properties", cluster.client_config()
    )


def acls(cluster: LocalCluster, config: Path, *args: str) -> CompletedProcess[str]:
    return run_cli(
        "acls", "--bootstrap-server", bootstrap(cluster), "--command-config", str(config), *args
    )


def ok(result: CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout


def stored(cluster: LocalCluster, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
    """A pattern's ACLs as the brokers keep them: Kafka's znode, Kafka's JSON."""
    data = cluster.zk_client().get_data(acl_path(pattern))
    return frozenset() if data is None else decode_acls(data)


T = "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
G = "ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)"
LOGS = "ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)"
ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
ALICE_DESCRIBE = "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)"
BOB_WRITE = "(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)"
BOB_CREATE = "(principal=User:bob, host=*, operation=CREATE, permissionType=ALLOW)"
BOB_DESCRIBE = "(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)"

CONSUMER = ["--consumer", "--topic", "t", "--group", "g", "--allow-principal", "User:alice"]
CONSUMER_ACLS = (
    f"Current ACLs for resource `{T}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
    f"Current ACLs for resource `{G}`: \n \t{ALICE_READ} \n\n"
)
PRODUCER_ACLS = (
    f"Current ACLs for resource `{LOGS}`: \n \t{BOB_WRITE}\n\t{BOB_CREATE}\n\t{BOB_DESCRIBE} \n\n"
)


def test_add_list_and_remove_acls(cluster: LocalCluster, admin_config: Path) -> None:
    assert ok(acls(cluster, admin_config, "--list")) == ""

    added = ok(acls(cluster, admin_config, "--add", *CONSUMER))
    assert added == (
        f"Adding ACLs for resource `{T}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
        f"Adding ACLs for resource `{G}`: \n \t{ALICE_READ} \n\n" + CONSUMER_ACLS
    )
    # Where Kafka keeps them.
    alice = [
        AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW)
        for op in (AclOperation.READ, AclOperation.DESCRIBE)
    ]
    topic_t = ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL)
    assert stored(cluster, topic_t) == frozenset(alice)
    assert stored(cluster, ResourcePattern(ResourceType.GROUP, "g", PatternType.LITERAL)) == {
        alice[0]
    }
    assert ok(acls(cluster, admin_config, "--list")) == CONSUMER_ACLS
    assert ok(acls(cluster, admin_config, "--list", "--topic", "t")) == (
        f"Current ACLs for resource `{T}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
    )

    # A prefixed pattern: every topic whose name starts with logs-.
    prefixed = ["--topic", "logs-", "--resource-pattern-type", "prefixed"]
    added = ok(
        acls(
            cluster, admin_config, "--add", "--producer", *prefixed, "--allow-principal", "User:bob"
        )
    )
    assert added == (
        f"Adding ACLs for resource `{LOGS}`: \n \t{BOB_WRITE}\n\t{BOB_CREATE}\n\t{BOB_DESCRIBE} \n\n"
        + PRODUCER_ACLS
    )
    assert (
        len(stored(cluster, ResourcePattern(ResourceType.TOPIC, "logs-", PatternType.PREFIXED)))
        == 3
    )
    # Sorted as the command prints them: by resource type, then pattern type, then name.
    t_block, g_block = CONSUMER_ACLS.split("\n\n")[:2]
    assert ok(acls(cluster, admin_config, "--list")) == (
        t_block + "\n\n" + PRODUCER_ACLS + g_block + "\n\n"
    )
    # match: the ACLs that apply to topic logs-eu, whatever their pattern.
    match = ["--topic", "logs-eu", "--resource-pattern-type", "match"]
    assert ok(acls(cluster, admin_config, "--list", *match)) == PRODUCER_ACLS
    assert ok(acls(cluster, admin_config, "--list", "--principal", "User:bob")) == (
        "ACLs for principal `User:bob`\n" + PRODUCER_ACLS
    )

    # One ACL, then the rest, without questions.
    removed = ok(
        acls(
            cluster,
            admin_config,
            "--remove",
            "--force",
            "--topic",
            "t",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Describe",
        )
    )
    assert removed == f"Current ACLs for resource `{T}`: \n \t{ALICE_READ} \n\n"
    assert (
        ok(acls(cluster, admin_config, "--remove", "--force", "--topic", "t", "--group", "g")) == ""
    )
    assert ok(acls(cluster, admin_config, "--remove", "--force", *prefixed)) == ""
    assert ok(acls(cluster, admin_config, "--list")) == ""
    assert stored(cluster, topic_t) == frozenset()


def add_user(cluster: LocalCluster, user: str, password: str) -> None:
    admin = AdminClient(cluster.client_config())
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
            )
        ]
    )
    for f in futures.values():
        f.result(30)


def test_a_principal_without_permission_on_the_cluster(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    add_user(cluster, "alice", ALICE_PASSWORD)
    settings = {
        **cluster.client_config(),
        "sasl.username": "alice",
        "sasl.password": ALICE_PASSWORD,
    }
    alice = write_properties(tmp_path / "alice.properties", settings)
    for args in (
        ["--list"],
        ["--add", *CONSUMER],
        ["--remove", "--force", "--topic", "t"],
    ):
        result = acls(cluster, alice, *args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert result.stderr.startswith(
            "Error while executing ACL command: CLUSTER_AUTHORIZATION_FAILED: "
        ), result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_cluster_without_an_authorizer(tmp_path: Path) -> None:
    with started_cluster(tmp_path / "plain", brokers=1) as plain:
        for args in (["--list"], ["--add", *CONSUMER], ["--remove", "--force", "--topic", "t"]):
            result = run_cli("acls", "--bootstrap-server", bootstrap(plain), *args)
            assert result.returncode == 1, (args, result.stdout, result.stderr)
            assert result.stderr.startswith(
                "Error while executing ACL command: SECURITY_DISABLED: No Authorizer is "
                "configured on the broker"
            ), result.stderr
            assert result.stderr.count("\n") == 1
