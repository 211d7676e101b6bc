"""The secured compose variant for real (docker-compose.yml with docker-compose.secure.yml):
SASL_SSL with SCRAM on the EXTERNAL listener, mutual TLS between the brokers on INTERNAL,
Kafka's AclAuthorizer on with the brokers and the admin user as super users, certificates
and the admin's credentials made by the one-shot `security` service.

One compose project for the module (its own project name and free host ports, so it never
meets the plaintext tests' project), ZooKeeper's session timeout at 6 s as there. Clients
run on the host, through the published ports: the CLI with the `--command-config` file the
`security` service wrote (copied out with `docker compose cp`, as the README says), and
librdkafka with the admin's settings.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError as ClientError

from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import client_config, new_producer
from minikafka.client.wire_security import SaslCredentials, WireSecurity
from minikafka.protocol.errors import ErrorCode, KafkaError
from tests.docker.compose import BROKERS, ComposeCluster, require_engine, wait_for
from tests.docker.test_compose_cluster import kill_the_leader_while_writing, new_topic

pytestmark = pytest.mark.timeout(900)

SESSION_TIMEOUT_MS = 6000
# As the plaintext kill test's (test_compose_cluster.py): the session timeout, then the
# controller's election; the rest is room for a loaded machine.
FAILOVER_BUDGET_S = SESSION_TIMEOUT_MS / 1000 + 4


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeCluster]:
    require_engine()
    p = ComposeCluster(session_timeout_ms=SESSION_TIMEOUT_MS, secure=True)
    logs = tmp_path_factory.mktemp("compose-secure") / "logs.txt"
    try:
        p.up("--build")
        p.client_files(tmp_path_factory.mktemp("client"))
        yield p
    finally:
        logs.write_text(p.logs(tail=2000))
        print(f"compose logs of {p.name}: {logs}")
        p.down("--volumes", "--remove-orphans")


def admin_config(p: ComposeCluster, **props: Any) -> dict[str, Any]:
    return client_config(p.bootstrap_servers, {**p.client_security(), **props})


def cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    local = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "minikafka"
    command = [str(local)] if local.exists() else ["minikafka"]
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd
    )


async def authenticates(p: ComposeCluster, broker: int, user: str, password: str) -> bool:
    """Whether `user` logs in (SCRAM-SHA-512) on the broker's published port."""
    conn = KafkaConnection(
        "localhost",
        p.broker_ports[broker],
        client_id="login-check",
        connect_timeout_s=10,
        security=WireSecurity(
            ssl.create_default_context(cafile=p.client_security()["ssl.ca.location"]),
            SaslCredentials("SCRAM-SHA-512", user, password),
        ),
    )
    try:
        await conn.call(metadata_request([]), 10)
    except KafkaError:
        return False
    finally:
        await conn.close()
    return True


# --- clients on the host ---------------------------------------------------------------


def test_the_documented_client_files_produce_and_consume_with_acks_all(
    project: ComposeCluster,
) -> None:
    """The README's way: the `security` service's client.properties and ca.pem, copied out
    with `docker compose cp` into minikafka-client/, used from the directory above it."""
    p = project
    for service in ("zookeeper", *(f"broker{b}" for b in BROKERS)):
        health = p.state(service).get("Health")
        assert isinstance(health, dict) and health["Status"] == "healthy", service
    assert p.state("security")["ExitCode"] == 0
    client_dir = p.client_security()["ssl.ca.location"]
    cwd = Path(client_dir).parent.parent
    config = ["--command-config", "minikafka-client/client.properties"]
    first = f"localhost:{p.broker_ports[1]}"

    def run(*args: str, stdin: str | None = None) -> str:
        done = cli(*args, cwd=cwd, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return done.stdout

    topic = f"orders-{uuid.uuid4().hex[:6]}"
    run("topics", *config, "--bootstrap-server", first, "--create", "--topic", topic)
    described = run("topics", *config, "--bootstrap-server", first, "--describe", "--topic", topic)
    assert "ReplicationFactor: 3" in described
    lines = [f"line-{i}" for i in range(300)]
    run(
        *("produce", *config, "--bootstrap-server", first, "--topic", topic, "--acks", "all"),
        stdin="\n".join(lines) + "\n",
    )
    # The file's own bootstrap.servers (every published port) when none is given.
    out = run("consume", *config, "--topic", topic, "--from-beginning", "--max-messages", "300")
    assert sorted(out.split()) == sorted(lines)


def test_clients_without_credentials_are_refused(project: ComposeCluster) -> None:
    p = project
    port = p.broker_ports[2]

    async def metadata_error(security: WireSecurity) -> Exception | None:
        conn = KafkaConnection(
            "localhost", port, client_id="test", connect_timeout_s=10, security=security
        )
        try:
            await conn.call(metadata_request([]), 10)
        except Exception as e:
            return e
        finally:
            await conn.close()
        return None

    # Plaintext to the SASL_SSL listener: no TLS handshake, no answer; closed.
    assert isinstance(asyncio.run(metadata_error(WireSecurity())), KafkaError)
    # TLS, but a request before SASL authentication: closed, as Kafka closes it.
    context = ssl.create_default_context(cafile=p.client_security()["ssl.ca.location"])
    assert isinstance(asyncio.run(metadata_error(WireSecurity(context))), KafkaError)

    # The wire: a wrong password is refused with SASL_AUTHENTICATION_FAILED.
    wrong_password = WireSecurity(context, SaslCredentials("SCRAM-SHA-512", "admin", "wrong"))
    refused = asyncio.run(metadata_error(wrong_password))
    assert isinstance(refused, KafkaError), refused
    assert refused.code == ErrorCode.SASL_AUTHENTICATION_FAILED, refused

    # A Kafka client with a wrong password: librdkafka reports the authentication failure.
    errors: list[ClientError] = []
    producer = new_producer(
        admin_config(p, **{"sasl.password": "not-the-password", "error_cb": errors.append})
    )
    wait_for("the authentication error", lambda: (producer.poll(0.5), errors)[1], 30)
    assert any(e.code() == ClientError._AUTHENTICATION for e in errors), errors


def test_a_user_without_acls_is_refused_the_topic(project: ComposeCluster, tmp_path: Path) -> None:
    p = project
    topic = new_topic(p)
    # A new user through the published port, with the admin's --command-config.
    config = p.command_config(tmp_path / "admin.properties")
    added = cli(
        *("configs", "--command-config", str(config), "--entity-type", "users"),
        *("--entity-name", "carol", "--alter"),
        *("--add-config", "SCRAM-SHA-512=[password=carol-secret]"),
        cwd=tmp_path,
    )
    assert added.returncode == 0, added.stderr

    # Every broker has her credentials (each reads /config/users on its change notification).
    def logs_in_everywhere() -> bool:
        return all(asyncio.run(authenticates(p, b, "carol", "carol-secret")) for b in BROKERS)

    wait_for("carol known to every broker", logs_in_everywhere, 60, interval=1)

    outcomes: list[ClientError | None] = []
    producer = new_producer(
        admin_config(
            p,
            **{"sasl.username": "carol", "sasl.password": "carol-secret", "acks": "all"},
            **{"message.timeout.ms": 20_000},
        )
    )

    def produce_one() -> bool:
        producer.produce(topic, b"x", partition=0, on_delivery=lambda e, m: outcomes.append(e))
        producer.flush(25)
        return bool(outcomes)

    wait_for("carol's produce answered", produce_one, 60, interval=1)
    refused = outcomes[-1]
    assert refused is not None and refused.code() == ClientError.TOPIC_AUTHORIZATION_FAILED, (
        outcomes
    )


def test_the_admin_endpoints_ask_for_the_token(project: ComposeCluster) -> None:
    """admin.listeners.token (MINIKAFKA_ADMIN_TOKEN): /health stays open, the rest asks for
    the token; the serving broker presents it to the others for the dashboard's view."""
    p = project
    base = f"http://localhost:{p.admin_ports[1]}"
    with urllib.request.urlopen(base + "/health", timeout=10) as resp:
        assert resp.status == 200
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(base + "/v1/cluster", timeout=10)
    assert refused.value.code == 401
    with_token = urllib.request.Request(
        base + "/v1/cluster", headers={"Authorization": f"Bearer {p.admin_token}"}
    )

    def every_broker_answers() -> bool:
        with urllib.request.urlopen(with_token, timeout=10) as resp:
            brokers = json.loads(resp.read())["brokers"]
        return len(brokers) == len(BROKERS) and all(
            b["status"] == "alive" and b["reachable"] for b in brokers
        )

    wait_for("every broker alive on the dashboard", every_broker_answers, 60)


# --- the kill test -----------------------------------------------------------------------


def test_kill_of_the_leader_loses_nothing_acknowledged_and_it_rejoins(
    project: ComposeCluster,
) -> None:
    """docker kill (SIGKILL) of the partition's leader while acks=all writes flow over
    SASL_SSL: a new leader within the plaintext test's budget, every acknowledged record at
    its offset, and the killed broker back in the ISR after `docker compose start` (its
    replica fetcher authenticates to the leader with its certificate again)."""
    p = project
    victim = kill_the_leader_while_writing(p, new_topic(p, partitions=1), FAILOVER_BUDGET_S)
    health = wait_for(
        f"broker{victim} healthy again",
        lambda: (p.state(f"broker{victim}").get("Health") or {}).get("Status") == "healthy",
        90,
        interval=1,
    )
    print(f"broker{victim} healthy {health:.1f}s after its ISR return")
