"""The admin endpoints of a secured cluster (`cluster up --security sasl_ssl`) ask for the
cluster's token (`admin.listeners.token`): real ZooKeeper, real broker processes. The
cluster starts (its readiness check reads `/v1/broker` with the token), every route but
`/health` refuses a request without it and lets in a bearer token or basic auth, the
dashboard's cluster view holds every broker's own view (the brokers' requests to each
other's endpoints carry the token), DescribeConfigs describes it as Kafka describes a
password, and the token is in no answer and in no broker's log."""

from __future__ import annotations

import asyncio
import base64
import json
import stat
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from minikafka.client.client_security import set_client_security
from minikafka.client.replicas import AdminEndpointError, ReplicaClient
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster, wait_until
from tests.cluster.helpers import http_get

pytestmark = pytest.mark.timeout(300)

ROUTES = ["/metrics", "/v1/cluster", "/v1/broker", "/v1/partitions", "/v1/local", "/"]
WRONG = "wrong-token-0123456789"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Started means ready: every broker's /v1/broker read, with the token.
    with started_cluster(tmp_path_factory.mktemp("admin-token"), security="sasl_ssl") as c:
        admin = AdminClient(c.client_config())
        admin.create_topics([NewTopic("tokens", 3, 3)])["tokens"].result(60)
        yield c


@pytest.fixture(scope="module")
def token(cluster: LocalCluster) -> str:
    token = cluster.admin_token()
    assert token is not None
    return token


# Every answer a test got, to look for the token in.
BODIES: list[bytes] = []


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    status, body = http_get(url, headers=headers)
    BODIES.append(body)
    return status, body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_the_token_is_the_clusters_own_secret(cluster: LocalCluster, token: str) -> None:
    assert cluster.security is not None
    path = cluster.security.admin_token_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cluster.status()["admin_token_file"] == str(path)
    assert token not in json.dumps(cluster.status())
    for bid in cluster.broker_ids:
        # server.properties holds it (and the admin's password): its owner's only.
        assert stat.S_IMODE(cluster.config_path(bid).stat().st_mode) == 0o600


def test_without_the_token_every_route_but_health_is_refused(cluster: LocalCluster) -> None:
    for bid in cluster.broker_ids:
        base = cluster.admin_url(bid)
        status, body = get(f"{base}/health")
        assert status == 200 and json.loads(body)["status"] == "ok"
        for route in ROUTES:
            for headers in (None, bearer(WRONG), basic("admin", WRONG)):
                status, _ = get(f"{base}{route}", headers)
                assert status == 401, (bid, route, headers)
    # The challenge a browser answers with its login dialog.
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{cluster.admin_url(1)}/metrics", timeout=10)
    assert e.value.code == 401
    assert e.value.headers["WWW-Authenticate"] == 'Basic realm="minikafka"'


def test_a_bearer_token_or_basic_auth_is_let_in(cluster: LocalCluster, token: str) -> None:
    for bid in cluster.broker_ids:
        base = cluster.admin_url(bid)
        for headers in (bearer(token), basic("admin", token), basic("dashboard-user", token)):
            for route in ROUTES:
                status, body = get(f"{base}{route}", headers)
                assert status == 200, (bid, route, headers)
            status, body = get(f"{base}/v1/broker", headers)
            assert json.loads(body)["broker_id"] == bid
    status, body = get(f"{cluster.admin_url(1)}/metrics", bearer(token))
    assert b"kafka_server_replicamanager_partitioncount" in body


def test_the_dashboard_gathers_every_brokers_view_with_the_token(
    cluster: LocalCluster, token: str
) -> None:
    """Broker 1's cluster view holds each other broker's own answer (its partitions and
    leaders, from its /v1/local): the brokers sent each other the token."""

    def every_broker_answered() -> bool:
        status, body = get(f"{cluster.admin_url(1)}/v1/cluster", bearer(token))
        assert status == 200
        view = json.loads(body)
        return [(b["id"], b["status"], b["reachable"], b["error"]) for b in view["brokers"]] == [
            (bid, "alive", True, None) for bid in cluster.broker_ids
        ] and all(isinstance(b["partitions"], int) and b["partitions"] > 0 for b in view["brokers"])

    wait_until(every_broker_answered, 30, "every broker's own view in broker 1's /v1/cluster")


def test_describe_configs_shows_it_as_sensitive_without_its_value(
    cluster: LocalCluster, token: str
) -> None:
    admin = AdminClient(cluster.client_config())
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(30)
    entry = configs["admin.listeners.token"]
    assert entry.is_sensitive and entry.value is None
    assert all(c.value != token for c in configs.values())
    assert configs["admin.listeners"].value == cluster.admin_url(1)


def test_replica_views_are_read_with_the_clusters_token(cluster: LocalCluster, token: str) -> None:
    async def describe(admin_token: str | None) -> list[object]:
        async with ReplicaClient(
            cluster.bootstrap_servers, admin_token=admin_token, default_api_timeout_ms=20_000
        ) as client:
            return [p.error for p in await client.describe_replicas(["tokens"])]

    set_client_security(cluster.client_config())  # SASL_SSL for librdkafka's requests
    try:
        assert asyncio.run(describe(token)) == [None, None, None]
        refused = asyncio.run(describe(None))
    finally:
        set_client_security({})
    assert refused and all(isinstance(e, AdminEndpointError) for e in refused)
    assert all("(HTTP 401)" in str(e) for e in refused)


def test_the_token_is_in_no_answer_and_no_log_line(cluster: LocalCluster, token: str) -> None:
    """Run last (file order): every answer the tests above got, and every broker's log."""
    assert len(BODIES) > 50
    assert not [b for b in BODIES if token.encode() in b]
    logs = {bid: Path(cluster.broker_log_path(bid)).read_text() for bid in cluster.broker_ids}
    for bid, text in logs.items():
        assert token not in text, f"broker {bid}'s log holds the token"
        assert WRONG not in text, f"broker {bid}'s log holds a token presented to it"
    # The refusals are logged (at INFO), without what was presented.
    assert "refused (401): no credentials" in logs[1]
    assert "refused (401): a wrong token" in logs[1]
