"""A broker process: wires storage, replication, the controller and the network together,
and owns the lifecycle (startup order, ZooKeeper session loss, controlled shutdown).

Startup, as Kafka's KafkaServer: recover logs, connect to ZooKeeper, start serving, then
register `/brokers/ids/<id>` (its czxid is our broker epoch) and start the controller
election. Shutdown reverses it after a controlled shutdown (§8.7) has moved leadership away.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.clock import SYSTEM_CLOCK, Clock
from minikafka.common import Endpoint, LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig, parse_admin_listener
from minikafka.config.dynamic import DEFAULT_BROKER_ENTITY, BrokerConfigLayers
from minikafka.config.listeners import Listeners
from minikafka.config.zk_client import KAFKA_OPTS_ENV, load_zk_client_auth
from minikafka.controller.controller import KafkaController
from minikafka.controller.zk_store import KazooControllerZkStore
from minikafka.coordinator.group.group_coordinator import GroupConfig
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.replication.fetcher import ReplicaFetcherManager
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.connection import BrokerConnection, NetworkError
from minikafka.rpc.messages import ControlledShutdownRequest, ControlledShutdownResponse
from minikafka.security.authorizer import (
    ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
    SUPER_USERS_CONFIG,
    AclAuthorizer,
)
from minikafka.server.acl_store import AclStore
from minikafka.server.broker_services import BrokerServices
from minikafka.server.config_changes import ConfigChangeListener
from minikafka.server.gc_pauses import (
    FULL_COLLECTION_CHECK_S,
    FullCollectionSchedule,
    GcPauseLog,
    defer_full_collections,
    resident_bytes,
    restore_full_collections,
)
from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter
from minikafka.server.kafka_api.handler import KafkaApiHandler
from minikafka.server.listener_security import inter_broker_connections, listener_security
from minikafka.server.metadata_cache import MetadataCache
from minikafka.server.network import SocketServer
from minikafka.server.rpc_apis import RpcApis
from minikafka.storage.log_cleaner import CleanerStopped, PassResult
from minikafka.storage.log_config import LONG_MAX, LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.open_files import OpenFiles, raise_open_files_limit
from minikafka.zk import paths
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.client import ZkClient, ZkClientAuth, ZkError, ZkState
from minikafka.zk.codecs import BrokerInfo, new_cluster_id

if TYPE_CHECKING:
    from minikafka.server.admin_endpoint import AdminEndpoint, AdminEndpointFactory

log = logging.getLogger(__name__)

# Kafka's log.flush.offset.checkpoint.interval.ms default.
RECOVERY_POINT_CHECKPOINT_INTERVAL_MS = 60_000

# Not a Kafka property: `minikafka cluster` sets this so that it can expire our ZooKeeper
# session on demand (LocalCluster.expire_session). Unset, nothing is written.
ZK_SESSION_FILE_ENV = "MINIKAFKA_ZK_SESSION_FILE"


class KafkaServer:
    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        admin_endpoint: AdminEndpointFactory | None = None,
        zk_auth: ZkClientAuth | None = None,
    ) -> None:
        """`admin_endpoint` makes the admin endpoint when admin.listeners is set (the endpoint
        lives in a layer above the broker: `minikafka broker` gives admin_http's).
        `zk_auth`: who the broker is to ZooKeeper (config/zk_client.py); by default read
        as Kafka reads it, from the JAAS file `$KAFKA_OPTS` names."""
        if config.admin_listeners is not None and admin_endpoint is None:
            raise ValueError("admin.listeners is set but the broker was given no admin endpoint")
        self.config = config
        self.clock = clock
        self.broker_id = config.broker_id
        self.log_manager = LogManager(
            [Path(d) for d in config.log_dirs],
            config.log_config(),
            clock=clock,
            open_files=OpenFiles(config.log_open_files_max),
        )
        self.metadata_cache = MetadataCache(config.broker_id)
        self._gc_pauses = GcPauseLog()
        self._gc_deferred = False
        if zk_auth is None:
            zk_auth = load_zk_client_auth(
                config.zookeeper_set_acl,
                os.environ.get(KAFKA_OPTS_ENV, ""),
                dict(config.zookeeper_tls_props),
            )
        self.zk = ZkClient(
            config.zookeeper_connect,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
            auth=zk_auth,
        )
        self.replica_manager = ReplicaManager(
            config,
            self.log_manager,
            clock,
            self._load_topic_configs,
            isr_writer=self._write_isr,
            isr_change_notifier=self._notify_isr_changes,
        )
        # Each listener's security, and how this broker reaches the others (security.py):
        # checked at load, key files read here (InvalidConfigError naming the property).
        self.security = config.security()
        self.inter_broker_connections = inter_broker_connections(self.security)
        self.fetcher_manager = ReplicaFetcherManager(
            self.replica_manager, config, self.inter_broker_connections
        )
        self.replica_manager.fetcher_manager = self.fetcher_manager
        self.controller: KafkaController | None = None
        self.services: BrokerServices | None = None
        self.group_coordinator: GroupCoordinatorAdapter | None = None
        # One socket server per listener (`listeners`), by listener name.
        self.socket_servers: dict[str, SocketServer] = {}
        self.broker_epoch = -1
        # Advertised endpoints, as registered in /brokers/ids/<id>; `advertised` is the
        # inter-broker one's (host, port).
        self.advertised_endpoints: tuple[Endpoint, ...] = ()
        self.advertised: tuple[str, int] = ("", 0)
        self._tasks: list[asyncio.Task[None]] = []
        self._session_lost = False
        self._reregistering: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        # Set once started and told of the cluster: Kafka-protocol requests wait for it.
        self._serving_clients = asyncio.Event()
        self._shutting_down = False
        self._session_file = os.environ.get(ZK_SESSION_FILE_ENV) or None
        self._published_session: int | None = None
        self.zk_session_expirations = 0  # Kafka's ZooKeeperExpiresPerSec, as a count
        self._admin_endpoint = admin_endpoint
        self.admin_server: AdminEndpoint | None = None
        # server.properties under the dynamic broker configs (KIP-226), read at startup.
        self.config_layers = BrokerConfigLayers(config)
        # The ACLs (authorizer.class.name set), from startup on.
        self.acl_store: AclStore | None = None
        self.config_changes = ConfigChangeListener(
            self.zk,
            self._apply_topic_config_changes,
            self._apply_broker_config_changes,
            self._apply_user_config_changes,
        )

    @property
    def zk_session_lost(self) -> bool:
        """True from a session's expiry until the broker has registered on a new one."""
        return self._session_lost or (
            self._reregistering is not None and not self._reregistering.done()
        )

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # --- topic configs -------------------------------------------------------------------

    async def _load_topic_configs(self, topics: list[str]) -> dict[str, LogConfig]:
        """Topic overrides from `/config/topics/<t>` over the broker's defaults."""

        overrides = await asyncio.to_thread(self.zk.get_topic_configs, topics)
        base = self.config.log_config()
        configs: dict[str, LogConfig] = {}
        for t, o in overrides.items():
            try:
                configs[t] = base.with_overrides(o)
            except KafkaError as e:
                log.error("topic %s has an invalid config %s (%s); using defaults", t, o, e)
                configs[t] = base
        return configs

    async def _apply_topic_config_changes(self, topics: list[str]) -> None:
        """A topic's overrides changed (`/config/changes`): its logs here take the new
        config at once (Kafka's TopicConfigHandler)."""
        configs = await self._load_topic_configs(topics)
        for tp, lg in self.log_manager.all_logs().items():
            new = configs.get(tp.topic)
            if new is not None and new != lg.config:
                log.info("%s: config is now %s", tp, new)
                lg.config = new
        if self.controller is not None and any(
            c.unclean_leader_election_enable for c in configs.values()
        ):
            # Kafka's TopicUncleanLeaderElectionEnable: offline partitions may now get one.
            self.controller.enable_unclean_leader_election()

    # --- dynamic broker configs (KIP-226) ----------------------------------------------------

    async def _read_config_layers(self) -> BrokerConfigLayers:
        default, own = await asyncio.gather(
            asyncio.to_thread(self.zk.get_broker_config, DEFAULT_BROKER_ENTITY),
            asyncio.to_thread(self.zk.get_broker_config, str(self.broker_id)),
        )
        return BrokerConfigLayers(self.config_layers.static, default, own)

    async def _apply_user_config_changes(self, users: list[str]) -> None:
        """`/config/users/<user>` changed (Kafka's UserConfigHandler): its SCRAM credentials
        are read again, so a new password works, and an old one stops working, at once."""
        if self.services is None:
            return
        names = [paths.desanitized_user(u) for u in users]
        await self.services.scram_credentials.refresh(self.services.user_store, names)
        log.info("SCRAM credentials of %s reloaded", ", ".join(names))

    async def _apply_broker_config_changes(self, entities: list[str]) -> None:
        """`/config/brokers/<default>` or this broker's `/config/brokers/<id>` changed (Kafka's
        BrokerConfigHandler): read both again and put the settings in force."""
        if not {DEFAULT_BROKER_ENTITY, str(self.broker_id)} & set(entities):
            return
        await self._reconfigure(await self._read_config_layers())

    async def _reconfigure(self, layers: BrokerConfigLayers) -> None:
        """Put `layers`' settings in force in every part of the broker that holds them, as
        Kafka's Reconfigurables do: new logs and topics without an override take the new
        defaults at once, the cleaner its next backoff, the controller its next election."""
        old, new = self.config, layers.effective()
        self.config_layers = layers
        if self.services is not None:
            self.services.config_layers = layers
        if new == old:
            return
        changed = {
            BrokerConfig.property_name(f.name): getattr(new, f.name)
            for f in dataclasses.fields(new)
            if getattr(new, f.name) != getattr(old, f.name)
        }
        log.info("broker %d: dynamic configs now in force: %s", self.broker_id, changed)
        self.config = new
        self.replica_manager.config = new
        self.replica_manager.leader_quota.update_quota(new.leader_replication_throttled_rate)
        self.replica_manager.follower_quota.update_quota(new.follower_replication_throttled_rate)
        if self.services is not None:
            self.services.config = new
        if self.controller is not None:
            self.controller.config = new
        if new.log_config() != old.log_config():
            self.log_manager.default_config = new.log_config()
            topics = sorted({tp.topic for tp in self.log_manager.all_logs()})
            if topics:
                await self._apply_topic_config_changes(topics)
        if (
            self.controller is not None
            and new.unclean_leader_election_enable
            and not old.unclean_leader_election_enable
        ):
            self.controller.enable_unclean_leader_election()

    async def _write_isr(self, tp: TopicPartition, new: LeaderAndIsr, expected: int) -> int | None:
        return await asyncio.to_thread(self.zk.update_partition_state_as_leader, tp, new, expected)

    async def _notify_isr_changes(self, tps: list[TopicPartition]) -> None:
        await asyncio.to_thread(self.zk.create_isr_change_notifications, tps)

    # --- startup -------------------------------------------------------------------------

    async def startup(self) -> None:
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        log.info("broker %d starting", self.broker_id)
        raise_open_files_limit()
        self._gc_pauses.install()
        defer_full_collections()
        self._gc_deferred = True
        await asyncio.to_thread(self.log_manager.startup)
        logs = self.log_manager.all_logs()
        # Logs found on disk were opened with the broker's defaults; their topics' overrides
        # come from ZooKeeper once connected.
        await asyncio.to_thread(self.zk.start)
        self._publish_zk_session()
        await asyncio.to_thread(self.zk.ensure_persistent_paths)
        cluster_id = await asyncio.to_thread(self.zk.get_or_create_cluster_id, new_cluster_id())
        log.info("cluster id %s", cluster_id)
        # Kafka's DynamicBrokerConfig.initialize: the dynamic configs before anything uses them.
        await self._reconfigure(await self._read_config_layers())
        if logs:
            configs = await self._load_topic_configs(sorted({tp.topic for tp in logs}))
            for tp, lg in logs.items():
                lg.config = configs[tp.topic]

        bridge = LoopBridge(loop)
        self.zk.add_connection_listener(bridge.wrap(self._on_zk_state))
        await self.config_changes.start(bridge)
        self.controller = KafkaController(
            self.config,
            KazooControllerZkStore(self.zk, loop),
            clock=self.clock,
            connection_security=self.inter_broker_connections,
        )
        self.services = services = BrokerServices(
            self.config,
            self.replica_manager,
            self.metadata_cache,
            self.zk,
            self.controller,
            self.clock.now_ms,
            cluster_id=cluster_id,
            config_layers=self.config_layers,
        )
        self.group_coordinator = GroupCoordinatorAdapter(
            GroupConfig.from_broker_config(self.config),
            self.replica_manager,
            self.clock,
            commit_timeout_ms=self.config.offsets_commit_timeout_ms,
        )
        services.group_coordinator = self.group_coordinator
        rpc_apis = RpcApis(services)
        if self.security.authorizer:
            # Kafka's AclAuthorizer.configure, before any listener opens: the ACL znodes,
            # every ACL in the cache, then the change notifications watched. The listeners'
            # RPC check holds `services.authorizer` itself, so its `acls` is set in place.
            self.acl_store = AclStore(
                self.zk, AclAuthorizer.from_config(self._authorizer_configs())
            )
            await self.acl_store.load()
            await self.acl_store.start(bridge)
            services.acl_store = self.acl_store
            services.authorizer.acls = self.acl_store.authorizer
        listeners = self.config.resolved_listeners()
        # SCRAM credentials before the listeners open: no client is refused for want of them.
        await services.scram_credentials.load(services.user_store)
        for ep in listeners.bind:
            server = SocketServer(
                rpc_apis.handle,
                ep.host or "0.0.0.0",
                ep.port,
                max_frame_bytes=self.config.socket_request_max_bytes,
                on_fetch_connection_closed=self.replica_manager.fetch_connection_closed,
                kafka_handler=KafkaApiHandler(services, ep.listener, self._serving_clients),
                listener=ep.listener,
                security=listener_security(
                    self.security.listeners[ep.listener],
                    self.security,
                    services.scram_credentials.get,
                    failed_authentication_delay_ms=(
                        self.config.connection_failed_authentication_delay_ms
                    ),
                    sasl_max_receive_size=self.config.sasl_server_max_receive_size,
                    rpc_allowed=services.authorizer.rpc_allowed,
                ),
            )
            self.socket_servers[ep.listener] = server
            await server.start()
        self.advertised_endpoints = self._advertised_endpoints(listeners)
        inter = next(e for e in self.advertised_endpoints if e.listener == listeners.inter_broker)
        self.advertised = (inter.host, inter.port)
        if self.config.admin_listeners is not None and self._admin_endpoint is not None:
            host_port = parse_admin_listener(self.config.admin_listeners)
            self.admin_server = self._admin_endpoint(self, *host_port)
            await self.admin_server.start()
        await self._register()
        await self.controller.startup()
        self._tasks.append(asyncio.create_task(self._serve_clients(), name="serve-clients"))
        self._start_periodic_tasks()
        log.info(
            "broker %d started in %.2fs: serving %s:%d, broker epoch %d, %d logs",
            self.broker_id,
            time.monotonic() - started,
            *self.advertised,
            self.broker_epoch,
            len(logs),
        )

    def _authorizer_configs(self) -> dict[str, str]:
        return {
            SUPER_USERS_CONFIG: self.config.super_users or "",
            ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: str(
                self.config.allow_everyone_if_no_acl_found
            ).lower(),
        }

    def _advertised_endpoints(self, listeners: Listeners) -> tuple[Endpoint, ...]:
        bound = {e.listener: e for e in listeners.bind}
        out = []
        for e in listeners.advertised:
            # An empty host: this machine's name (Kafka: the canonical host name); port 0:
            # the port the listener got.
            host = e.host or bound[e.listener].host or socket.getfqdn()
            port = e.port or self.socket_servers[e.listener].port
            out.append(Endpoint(e.listener, host, port))
        return tuple(out)

    async def _register(self) -> None:
        info = dataclasses.replace(
            BrokerInfo.from_endpoints(
                self.broker_id, self.advertised_endpoints, self.config.broker_rack
            ),
            admin_url=self._admin_url(),
            protocols=tuple(
                (listener, protocol)
                for listener, protocol in self.config.resolved_listeners().protocols
                if protocol != "PLAINTEXT"
            ),
        )
        # A restart within the session timeout finds our old registration still there.
        self.broker_epoch = await asyncio.to_thread(
            self.zk.register_broker, info, self.config.zookeeper_session_timeout_ms + 5000
        )
        self.replica_manager.broker_epoch = self.broker_epoch
        log.info("registered /brokers/ids/%d (broker epoch %d)", self.broker_id, self.broker_epoch)

    async def _serve_clients(self) -> None:
        """Let Kafka clients' requests through once the controller's first UpdateMetadata
        has arrived (it sends one as soon as it sees our registration): before it, Metadata
        would name no brokers and no topics. Without a controller to send it, after a
        ZooKeeper session timeout anyway, as Kafka answers from an empty cache."""
        deadline = time.monotonic() + self.config.zookeeper_session_timeout_ms / 1000
        while not self.metadata_cache.initialized and time.monotonic() < deadline:
            await self.metadata_cache.wait_for_change(deadline - time.monotonic())
        self._serving_clients.set()

    def _admin_url(self) -> str | None:
        """Where the other brokers reach our admin endpoint: its own host, or when it binds
        every address, our inter-broker advertised host."""
        if self.admin_server is None or self.config.admin_listeners is None:
            return None
        host, _ = parse_admin_listener(self.config.admin_listeners)
        if host in ("", "0.0.0.0", "::"):
            host = self.advertised[0]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.admin_server.port}"

    def _publish_zk_session(self) -> None:
        """Write the current session's id and password to `$MINIKAFKA_ZK_SESSION_FILE`
        (owner-only, replaced atomically) whenever it is a new session."""
        creds = self.zk.session_credentials
        if self._session_file is None or creds is None or creds[0] == self._published_session:
            return
        session_id, password = creds
        record = {
            "broker_id": self.broker_id,
            "pid": os.getpid(),
            "session_id": session_id,
            "password": password.hex(),
        }
        tmp = f"{self._session_file}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                os.fchmod(f.fileno(), 0o600)  # an older tmp file keeps its mode otherwise
                f.write(json.dumps(record) + "\n")
            os.replace(tmp, self._session_file)
        except OSError as e:
            log.warning("cannot write the ZooKeeper session to %s: %s", self._session_file, e)
            return
        self._published_session = session_id

    def _on_zk_state(self, state: ZkState) -> None:
        if state is ZkState.CONNECTED:
            self._publish_zk_session()
        if state is ZkState.LOST:
            log.warning("ZooKeeper session lost; will re-register when a new one is established")
            self._session_lost = True
            self.zk_session_expirations += 1
            if self.controller is not None:
                self.controller.on_zk_session_expired()
        elif state is ZkState.CONNECTED and self._session_lost and not self._shutting_down:
            self._session_lost = False
            if self._reregistering is None or self._reregistering.done():
                self._reregistering = asyncio.create_task(self._reregister())

    async def _reregister(self) -> None:
        while not self._shutting_down:
            try:
                await self._register()
                if self.controller is not None:
                    self.controller.on_zk_session_reestablished()
                return
            except (ZkError, KafkaError) as e:
                log.warning("re-registration failed: %s; retrying", e)
                await asyncio.sleep(1.0)  # backoff between attempts, not synchronisation

    # --- periodic work -------------------------------------------------------------------

    def _start_periodic_tasks(self) -> None:
        cfg = self.config

        def every(name: str, interval_ms: int, fn: Callable[[], object]) -> None:
            if interval_ms <= 0 or interval_ms >= LONG_MAX:
                return

            async def run() -> None:
                while True:
                    await asyncio.sleep(interval_ms / 1000)
                    try:
                        result = fn()
                        if isinstance(result, Awaitable):
                            await result
                    except Exception:
                        log.exception("periodic task %s failed", name)

            self._tasks.append(asyncio.create_task(run(), name=name))

        lm = self.log_manager
        # Offsets taken here, on the loop; files written and fsynced in a thread.
        every(
            "highwatermark-checkpoint",
            cfg.replica_high_watermark_checkpoint_interval_ms,
            lambda: asyncio.to_thread(lm.write_checkpoints, lm.high_watermark_checkpoints()),
        )
        every(
            "recovery-point-checkpoint",
            RECOVERY_POINT_CHECKPOINT_INTERVAL_MS,
            lambda: asyncio.to_thread(
                lm.write_checkpoints, lm.recovery_point_and_log_start_checkpoints()
            ),
        )
        rm = self.replica_manager
        every("isr-expiration", cfg.replica_lag_time_max_ms // 2, rm.shrink_isrs)
        every(
            "isr-change-propagation",
            cfg.isr_change_propagation_check_interval_ms,
            rm.propagate_isr_changes,
        )
        # Through the replica manager: fetch sessions must learn of moved log start offsets.
        every("log-retention", cfg.log_retention_check_interval_ms, rm.cleanup_logs)
        every("log-flusher", cfg.log_flush_scheduler_interval_ms, self.log_manager.flush_dirty_logs)
        # Kafka schedules each deletion at its delay; a second's check comes close enough.
        every("delete-file", 1000, self.log_manager.delete_retired_files)
        schedule = FullCollectionSchedule(time.monotonic(), resident_bytes())

        def collect_when_due() -> None:
            rss = resident_bytes()
            if schedule.due(time.monotonic(), rss):
                gc.collect()  # logged by the GcPauseLog when long
                schedule.collected(time.monotonic(), resident_bytes())

        every("gc-full-collection", int(FULL_COLLECTION_CHECK_S * 1000), collect_when_due)
        if self.group_coordinator is not None:
            every(
                "group-metadata-manager-expire-offsets",
                cfg.offsets_retention_check_interval_ms,
                self.group_coordinator.expire_offsets,
            )
        if cfg.log_cleaner_enable:
            self._tasks.append(asyncio.create_task(self._run_log_cleaner(), name="log-cleaner"))

    async def _run_log_cleaner(self) -> None:
        """Kafka's log cleaner thread: clean the log that needs it most, again and again;
        when none does, look again after log.cleaner.backoff.ms. The reading and rewriting
        run in a thread of their own, the swap on the loop (storage/log_cleaner.py)."""
        lm = self.log_manager
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(1, thread_name_prefix="log-cleaner")
        try:
            while True:
                try:
                    job = lm.prepare_cleaning()
                except OSError as e:
                    # Out of descriptors for the sources, say: not a reason to stop cleaning.
                    log.warning("log cleaner: cannot start a pass: %s", e)
                    job = None
                if job is None:
                    # Read each time: log.cleaner.backoff.ms is a dynamic broker config.
                    await asyncio.sleep(self.config.log_cleaner_backoff_ms / 1000)
                    continue
                result: PassResult | None = None
                try:
                    result = await loop.run_in_executor(executor, job.run)
                except CleanerStopped:
                    return
                except asyncio.CancelledError:
                    job.stop.set()  # the thread gives up at its next batch
                    raise
                except Exception:
                    log.exception("log cleaner: cleaning %s failed", job.tp)
                if lm.finish_cleaning(job, result):
                    log.info(
                        "log cleaner: cleaned %s up to offset %d (%d segments rewritten)",
                        job.tp,
                        job.range.first_uncleanable,
                        len(result.cleaned) if result else 0,
                    )
                    await asyncio.to_thread(lm.write_checkpoints, lm.cleaner_checkpoints())
                else:
                    # Failed or overtaken: not straight again.
                    await asyncio.sleep(self.config.log_cleaner_backoff_ms / 1000)
        finally:
            executor.shutdown(wait=False)

    # --- shutdown ------------------------------------------------------------------------

    async def controlled_shutdown(self) -> bool:
        """§8.7: ask the controller to move leadership off this broker. Returns success."""
        cfg = self.config
        for attempt in range(1, cfg.controlled_shutdown_max_retries + 1):
            try:
                remaining = await self._send_controlled_shutdown()
                if not remaining:
                    log.info("controlled shutdown succeeded (attempt %d)", attempt)
                    return True
                log.info(
                    "controlled shutdown attempt %d: still leading %d partitions",
                    attempt,
                    len(remaining),
                )
                if not await self._other_live_brokers():
                    # The last broker of a cluster that is stopping: no retry can find a
                    # broker to lead these (Kafka would retry controlled.shutdown.max.retries
                    # times all the same, 3 x 5 s by default).
                    log.info(
                        "controlled shutdown: no other live broker can lead the %d "
                        "partitions left; not retrying",
                        len(remaining),
                    )
                    return False
            except (KafkaError, ZkError, OSError) as e:
                log.warning("controlled shutdown attempt %d failed: %s", attempt, e)
            if attempt < cfg.controlled_shutdown_max_retries:
                await asyncio.sleep(cfg.controlled_shutdown_retry_backoff_ms / 1000)
        log.warning("controlled shutdown did not complete; shutting down anyway")
        return False

    async def _other_live_brokers(self) -> list[int]:
        """Registered brokers but this one, as ZooKeeper says: the controller's UpdateMetadata
        naming a broker that stopped meanwhile may not have come yet (and this broker's
        answer may be what holds it up); its metadata if ZooKeeper cannot be read."""
        try:
            ids = await asyncio.to_thread(self.zk.get_broker_ids)
        except ZkError:
            ids = list(self.metadata_cache.live_brokers)
        return [b for b in ids if b != self.broker_id]

    async def _send_controlled_shutdown(self) -> list[object]:
        controller_id = await asyncio.to_thread(self.zk.get_controller_id)
        if controller_id is None:
            raise NetworkError("no controller is elected")
        info = await asyncio.to_thread(self.zk.get_broker, controller_id)
        if info is None:
            raise NetworkError(f"controller {controller_id} is not registered")
        ep = info.inter_broker_endpoint(self.config.resolved_listeners().inter_broker)
        conn = BrokerConnection(
            ep.host,
            ep.port,
            client_id=f"broker-{self.broker_id}",
            security=self.inter_broker_connections,
        )
        await conn.connect()
        try:
            resp: ControlledShutdownResponse = await conn.send(
                ControlledShutdownRequest(self.broker_id, self.broker_epoch),
                timeout_s=self.config.request_timeout_ms / 1000,
            )
        finally:
            await conn.close()
        if resp.error_code != ErrorCode.NONE:
            raise KafkaError(f"controller answered {ErrorCode(resp.error_code).name}")
        return list(resp.remaining_partitions)

    async def _stop_socket_server(self) -> None:
        for server in self.socket_servers.values():
            await server.stop()

    async def _stop_admin_server(self) -> None:
        if self.admin_server is not None:
            await self.admin_server.stop()

    async def _stop_acl_store(self) -> None:
        if self.acl_store is not None:
            await self.acl_store.stop()

    async def _stop_group_coordinator(self) -> None:
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()

    async def _stop_controller(self) -> None:
        if self.controller is not None:
            await self.controller.shutdown()

    async def shutdown(self) -> None:
        if self._shutting_down:
            return
        self._shutting_down = True
        log.info("broker %d shutting down", self.broker_id)
        self.replica_manager.leaving = True
        if self.config.controlled_shutdown_enable and self.broker_epoch != -1:
            await self.controlled_shutdown()
        for t in self._tasks:
            t.cancel()
        if self._reregistering is not None:
            self._reregistering.cancel()
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("config change listener", self.config_changes.stop),
            ("ACL change listener", self._stop_acl_store),
            ("group coordinator", self._stop_group_coordinator),
            ("replica manager", self.replica_manager.shutdown),
            ("replica fetchers", self.fetcher_manager.shutdown),
            ("socket server", self._stop_socket_server),
            ("admin endpoint", self._stop_admin_server),
            ("controller", self._stop_controller),
            ("log manager", lambda: asyncio.to_thread(self.log_manager.shutdown)),
            ("ZooKeeper client", lambda: asyncio.to_thread(self.zk.close)),
        ]
        for name, step in steps:
            log.debug("shutting down the %s", name)
            try:
                await step()
            except Exception:
                # Keep going: the log manager's clean close matters most.
                log.exception("shutting down the %s failed", name)
        self._gc_pauses.uninstall()
        if self._gc_deferred:
            self._gc_deferred = False
            restore_full_collections()
        log.info("broker %d shut down cleanly", self.broker_id)
        self._stopped.set()
