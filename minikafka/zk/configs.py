"""Entity configs (`/config/topics/<t>`, `/config/brokers/<entity>`) and the config change
notifications brokers watch (`/config/changes/config_change_<seq>`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from minikafka.zk import codecs, paths
from minikafka.zk.errors import ZkNodeExistsError, ZkNoNodeError
from minikafka.zk.session import ZkSession, log

__all__ = ["ConfigZnodes"]


class ConfigZnodes(ZkSession):
    """Topic and broker configs, written whole; the notifications of their changes."""

    # --- entity configs ----------------------------------------------------------------

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Create or overwrite `/config/topics/<t>` (Kafka's setOrCreateEntityConfigs)."""
        self._set_entity_config(paths.topic_config(topic), config)

    def _set_entity_config(self, path: str, config: Mapping[str, str]) -> None:
        data = codecs.encode_topic_config(config)
        try:
            self._call(f"set {path}", self._kazoo().set_async(path, data))
        except ZkNoNodeError:
            try:
                self._call(f"create {path}", self._create_async(path, data))
            except ZkNodeExistsError:
                self._call(f"set {path}", self._kazoo().set_async(path, data))

    def get_topic_config(self, topic: str) -> dict[str, str]:
        """Topic-level overrides; {} when there are none."""
        got = self._get(paths.topic_config(topic))
        return {} if got is None else codecs.decode_topic_config(topic, got[0])

    def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """`get_topic_config` of each topic, in one pipelined round trip."""
        topics = list(topics)
        got = self._get_many({t: paths.topic_config(t) for t in topics})
        return {t: codecs.decode_topic_config(t, got[t][0]) if t in got else {} for t in topics}

    def get_broker_config(self, entity: str) -> dict[str, str]:
        """`/config/brokers/<entity>` (a broker id, or `<default>`): its dynamic configs."""
        path = paths.broker_config(entity)
        got = self._get(path)
        return {} if got is None else codecs.decode_entity_config(f"broker config {path}", got[0])

    def get_user_config(self, user: str) -> dict[str, str]:
        """`/config/users/<user>`: its SCRAM credentials by mechanism; {} when none."""
        path = paths.user_config(user)
        got = self._get(path)
        return {} if got is None else codecs.decode_entity_config(f"user config {path}", got[0])

    def get_user_configs(self) -> dict[str, dict[str, str]]:
        """Every user's config, by user name, in one pipelined round trip."""
        names = self._children(paths.user_configs(), missing_ok=True)
        got = self._get_many({n: f"{paths.user_configs()}/{n}" for n in names})
        return {
            paths.desanitized_user(n): codecs.decode_entity_config(f"user config {n}", got[n][0])
            for n in names
            if n in got
        }

    def set_user_config(self, user: str, config: Mapping[str, str]) -> None:
        """Write a user's config whole, then notify every broker (`users/<user>`), as Kafka's
        AdminZkClient.changeUserOrUserClientIdConfig does."""
        self._set_entity_config(paths.user_config(user), config)
        self._notify_config_change(f"users/{paths.sanitized_user(user)}")

    # --- change notifications ----------------------------------------------------------

    def _notify_config_change(self, entity_path: str) -> None:
        self._call(
            f"notify the config change of {entity_path}",
            self._create_async(
                paths.config_change_prefix(),
                codecs.encode_config_change_notification(entity_path),
                sequence=True,
            ),
        )

    def get_config_change_notifications(self) -> dict[str, tuple[str | None, int]]:
        """Notification name -> (changed entity's path, or None if unreadable; creation
        time in ms), oldest first."""
        names = sorted(
            n
            for n in self._children(paths.config_changes(), missing_ok=True)
            if n.startswith(paths.CONFIG_CHANGE_PREFIX)
        )
        got = self._get_many({n: paths.config_change(n) for n in names})
        out: dict[str, tuple[str | None, int]] = {}
        for name in names:
            if name not in got:
                continue  # purged meanwhile
            data, stat = got[name]
            try:
                entity: str | None = codecs.decode_config_change_notification(data)
            except ValueError as e:
                log.warning("ignoring config change notification %s: %s", name, e)
                entity = None
            out[name] = (entity, int(stat.ctime))
        return out

    def delete_config_change_notifications(self, names: Iterable[str]) -> None:
        """Purge old notifications (Kafka's purgeObsoleteNotifications); gone ones are fine."""
        for name in names:
            with contextlib.suppress(ZkNoNodeError):
                self._call(f"delete {name}", self._kazoo().delete_async(paths.config_change(name)))
