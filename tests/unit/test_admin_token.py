"""The admin endpoint's token (`admin.listeners.token`): the real AdminHttpServer's app,
served on loopback by aiohttp's test server, over a stand-in for the broker it reads; the
setting itself (parsed, checked, described as Kafka describes a password); and a secured
local cluster's token file. The real cluster's side is tests/security/test_admin_token.py."""

from __future__ import annotations

import base64
import logging
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest
from aiohttp.test_utils import TestClient, TestServer

from minikafka.admin_http.server import AdminHttpServer, presented_token
from minikafka.clock import ManualClock
from minikafka.cluster import LocalCluster
from minikafka.cluster.broker_config import check_overrides
from minikafka.cluster.security import ClusterSecurity
from minikafka.common import Endpoint
from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import (
    AlterableConfig,
    AlterOp,
    BrokerConfigLayers,
    ConfigSource,
    ConfigType,
    altered_broker_configs,
    describe_broker,
)
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError

if TYPE_CHECKING:
    from minikafka.server.admin_endpoint import BrokerView

TOKEN = "s3cret-Token_42"
LOGGER = "minikafka.admin_http.server"


def stand_in_broker(token: str | None) -> BrokerView:
    """The parts of a running broker that /health, /v1/broker and /v1/partitions read."""
    config = BrokerConfig(broker_id=1, admin_listeners_token=token)
    broker = SimpleNamespace(
        broker_id=1,
        broker_epoch=17,
        config=config,
        clock=ManualClock(),
        advertised=("127.0.0.1", 9092),
        advertised_endpoints=(Endpoint("PLAINTEXT", "127.0.0.1", 9092),),
        shutting_down=False,
        zk=SimpleNamespace(connected=True),
        zk_session_lost=False,
        controller=None,
        replica_manager=SimpleNamespace(
            partitions={}, controller_epoch=3, leader_partitions=lambda: []
        ),
        metadata_cache=SimpleNamespace(controller_id=1, live_brokers={1: None}),
    )
    return cast("BrokerView", broker)


async def serve(token: str | None) -> TestClient[Any, Any]:
    server = AdminHttpServer(stand_in_broker(token), "127.0.0.1", 0)
    client: TestClient[Any, Any] = TestClient(TestServer(server.app(), host="127.0.0.1"))
    await client.start_server()
    return client


@pytest.fixture
async def secured() -> AsyncIterator[TestClient[Any, Any]]:
    client = await serve(TOKEN)
    yield client
    await client.close()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


PROTECTED = ["/v1/broker", "/v1/partitions", "/", "/static/app.js", "/metrics", "/v1/cluster"]


async def test_without_the_setting_nothing_is_asked() -> None:
    client = await serve(None)
    try:
        for path in ("/health", "/v1/broker", "/v1/partitions"):
            resp = await client.get(path)
            assert resp.status == 200, path
            assert "WWW-Authenticate" not in resp.headers
        # Credentials nobody asked for change nothing.
        resp = await client.get("/v1/broker", headers={"Authorization": "Bearer whatever"})
        assert resp.status == 200
    finally:
        await client.close()


async def test_every_route_but_health_needs_the_token(
    secured: TestClient[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    health = await secured.get("/health")
    assert health.status == 200
    assert (await health.json())["status"] == "ok"
    # Unknown routes too: without the token, not even which routes exist is told.
    for path in [*PROTECTED, "/nope"]:
        for method in ("GET", "HEAD", "POST"):
            resp = await secured.request(method, path)
            assert resp.status == 401, (method, path)
            assert resp.headers["WWW-Authenticate"] == 'Basic realm="minikafka"'
    body = await (await secured.get("/v1/broker")).json()
    assert body["error"] == "UNAUTHORIZED" and "admin.listeners.token" in body["message"]
    refused = [r for r in caplog.records if "refused (401)" in r.getMessage()]
    assert refused and all(r.levelno == logging.INFO for r in refused)
    assert "GET /v1/broker from 127.0.0.1 refused (401): no credentials" in caplog.text


async def test_a_bearer_token_or_basic_auth_with_any_user_name_is_let_in(
    secured: TestClient[Any, Any],
) -> None:
    for authorization in (
        f"Bearer {TOKEN}",
        f"bearer {TOKEN}",  # the scheme is case-insensitive (RFC 7235)
        basic("admin", TOKEN),
        basic("anyone at all", TOKEN),
        basic("", TOKEN),
    ):
        resp = await secured.get("/v1/broker", headers={"Authorization": authorization})
        assert resp.status == 200, authorization
        assert (await resp.json())["broker_id"] == 1
    resp = await secured.get("/v1/partitions", headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status == 200 and (await resp.json()) == {"partitions": []}
    # The page and its files, as a browser that was asked for basic auth fetches them.
    page = await secured.get("/", headers={"Authorization": basic("me", TOKEN)})
    assert page.status == 200 and "text/html" in page.headers["Content-Type"]


async def test_wrong_credentials_are_refused_and_never_logged(
    secured: TestClient[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = [
        "Bearer wrong-token-value",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        basic(TOKEN, "not-it"),  # the token as the user name is not the password
        basic("admin", "wrong-token-value"),
        f"Token {TOKEN}",
        f"Basic {TOKEN}",  # not base64 of user:password
        "Bearer",
        "Bearer tökén-wrong",
    ]
    for authorization in wrong:
        resp = await secured.get("/metrics", headers={"Authorization": authorization})
        assert resp.status == 401, authorization
        text = await resp.text()
        assert TOKEN not in text and "wrong-token-value" not in text
    assert "refused (401): a wrong token" in caplog.text
    assert "refused (401): unreadable credentials" in caplog.text
    # What was presented is in no log line, nor is the right token.
    assert "wrong-token-value" not in caplog.text and "not-it" not in caplog.text
    assert TOKEN not in caplog.text and TOKEN[:-1] not in caplog.text


def test_the_presented_token_is_read_from_either_scheme() -> None:
    assert presented_token(None) is None
    assert presented_token("") is None
    assert presented_token("Bearer  abc ") == b"abc"
    assert presented_token(basic("u", "p:w")) == b"p:w"  # the password may hold colons
    assert presented_token("Basic !!!") is None
    assert presented_token("Basic " + base64.b64encode(b"no-colon").decode()) is None
    assert presented_token("Digest abc") is None


# --- the setting -------------------------------------------------------------------------


def test_the_setting_is_parsed_checked_and_kept_out_of_the_repr() -> None:
    cfg = BrokerConfig.from_properties({"broker.id": "1", "admin.listeners.token": TOKEN})
    assert cfg.admin_listeners_token == TOKEN
    assert TOKEN not in repr(cfg)
    assert BrokerConfig.from_properties({"broker.id": "1"}).admin_listeners_token is None
    for bad in ("two words", "tab\there", "tökén"):
        with pytest.raises(InvalidConfigError) as e:
            BrokerConfig.from_properties({"broker.id": "1", "admin.listeners.token": bad})
        assert "admin.listeners.token" in str(e.value) and bad not in str(e.value)


def test_it_is_described_as_kafka_describes_a_password() -> None:
    static = BrokerConfig(broker_id=1, admin_listeners_token=TOKEN)
    (c,) = describe_broker(BrokerConfigLayers(static), ["admin.listeners.token"], True)
    assert (c.value, c.sensitive, c.read_only, c.type) == (None, True, True, ConfigType.PASSWORD)
    assert c.source is ConfigSource.STATIC_BROKER_CONFIG  # where it is set shows, not what
    assert [(y.value, y.source) for y in c.synonyms] == [
        (None, ConfigSource.STATIC_BROKER_CONFIG),
        (None, ConfigSource.DEFAULT_CONFIG),
    ]
    everything = describe_broker(BrokerConfigLayers(static), None, True)
    assert TOKEN not in repr(everything)
    assert all(not d.sensitive for d in everything if d.name != "admin.listeners.token")
    (unset,) = describe_broker(BrokerConfigLayers(BrokerConfig(broker_id=1)), [c.name], False)
    assert (unset.value, unset.sensitive, unset.source) == (None, True, ConfigSource.DEFAULT_CONFIG)


def test_it_cannot_be_changed_at_runtime() -> None:
    layers = BrokerConfigLayers(BrokerConfig(broker_id=1, admin_listeners_token=TOKEN))
    with pytest.raises(InvalidRequestError) as e:
        altered_broker_configs(
            layers, "1", {}, [AlterableConfig("admin.listeners.token", AlterOp.SET, "new-one")]
        )
    assert "Cannot update these configs dynamically: admin.listeners.token" in str(e.value)
    assert "new-one" not in str(e.value) and TOKEN not in str(e.value)


# --- a local cluster's token ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sasl_ssl", "ssl", "sasl_plaintext"])
def test_a_secured_local_cluster_makes_its_token(tmp_path: Path, mode: Any) -> None:
    security = ClusterSecurity(tmp_path, mode, "127.0.0.1")
    assert security.admin_token() is None  # not prepared yet
    security.prepare([1])
    token = security.admin_token()
    assert token is not None and len(token) >= 32
    assert stat.S_IMODE(security.admin_token_path.stat().st_mode) == 0o600
    assert BrokerConfig.from_properties({"broker.id": "1", "admin.listeners.token": token})
    props = security.broker_properties(1, "127.0.0.1", 9092)
    assert props["admin.listeners.token"] == token
    security.prepare([1, 2])  # a restart keeps it
    assert security.admin_token() == token
    assert ClusterSecurity(tmp_path / "other", mode, "127.0.0.1").admin_token() is None


def test_a_local_clusters_token_is_not_an_override() -> None:
    with pytest.raises(ValueError, match=r"admin\.listeners\.token cannot be overridden"):
        check_overrides({"admin.listeners.token": TOKEN})


def test_overrides_may_refine_a_secured_clusters_own_listener(tmp_path: Path) -> None:
    """`listener.name.<l>.` names the listener the security mode makes: checked against
    it, not against the plaintext default (and without the data dir prepared yet)."""
    plain_users = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'
        ),
    }
    cluster = LocalCluster(tmp_path / "c", security="sasl_plaintext", overrides=plain_users)
    assert cluster.overrides == plain_users
    assert not (tmp_path / "c" / "security").exists()
    with pytest.raises(ValueError, match="'sasl_plaintext' is not one of the broker's listeners"):
        LocalCluster(tmp_path / "d", overrides=plain_users)
