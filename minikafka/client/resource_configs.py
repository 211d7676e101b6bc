"""Topics' and brokers' configs over Kafka's protocol: DescribeConfigs (with synonyms),
IncrementalAlterConfigs and AlterConfigs, sent as Kafka's admin client sends them: a
broker's own configs to that broker, a topic's and the brokers' default to any broker.

kio over `kafka_wire` rather than librdkafka's admin calls: librdkafka's ConfigEntry keeps
synonyms in a dict by name, which loses the levels a broker config has under one name (its
per-broker, cluster-default and static values), and kafka-configs.sh prints all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from minikafka.client.kafka_wire import KafkaConnection, NetworkError
from minikafka.protocol.errors import ErrorCode, KafkaError, error_for_code

# Kafka's ConfigResource.Type codes.
TOPIC: Final = 2
BROKER: Final = 4
# Kafka's AlterConfigOp.OpType codes.
SET: Final = 0
DELETE: Final = 1

# The wire's ConfigSource codes by the names of Kafka's admin client's ConfigEntry.ConfigSource
# (what kafka-configs.sh prints).
SOURCE_NAMES: Final = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}
DYNAMIC_TOPIC_CONFIG: Final = 1
DYNAMIC_BROKER_CONFIG: Final = 2
DYNAMIC_DEFAULT_BROKER_CONFIG: Final = 3


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    """One config as the broker describes it (a sensitive one's value is None)."""

    name: str
    value: str | None
    source: int
    sensitive: bool
    read_only: bool
    synonyms: tuple[Synonym, ...] = ()


class ResourceConfigs:
    """The configs of the cluster whose brokers are at `addresses` (id -> host, port)."""

    def __init__(
        self,
        addresses: Mapping[int, tuple[str, int]],
        *,
        timeout_s: float = 30.0,
        client_id: str = "config-tool",
    ) -> None:
        self.addresses = dict(addresses)
        self.timeout_s = timeout_s
        self.client_id = client_id

    async def describe(
        self, resource_type: int, name: str, *, include_synonyms: bool = True
    ) -> list[ConfigEntry]:
        """Every config of the resource, in the broker's order; the resource's KafkaError
        (e.g. UNKNOWN_TOPIC_OR_PARTITION) when it cannot be described."""
        from kio.schema.describe_configs.v4.request import (
            DescribeConfigsRequest,
            DescribeConfigsResource,
        )
        from kio.static.primitive import i8

        request = DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(resource_type), resource_name=name, configuration_keys=None
                ),
            ),
            include_synonyms=include_synonyms,
            include_documentation=False,
        )
        response = await self._call(self._node_for(resource_type, name), request)
        (result,) = response.results
        _raise_for(int(result.error_code), result.error_message)
        return [
            ConfigEntry(
                c.name,
                c.value,
                int(c.config_source),
                c.is_sensitive,
                c.read_only,
                tuple(Synonym(y.name, y.value, int(y.source)) for y in c.synonyms),
            )
            for c in result.configs
        ]

    async def incremental_alter(
        self, resource_type: int, name: str, set_: Mapping[str, str], delete: Sequence[str]
    ) -> None:
        """IncrementalAlterConfigs: SET each of `set_`, DELETE each of `delete`."""
        from kio.schema.incremental_alter_configs.v1.request import (
            AlterableConfig,
            AlterConfigsResource,
            IncrementalAlterConfigsRequest,
        )
        from kio.static.primitive import i8

        configs = tuple(
            AlterableConfig(name=k, config_operation=i8(SET), value=v) for k, v in set_.items()
        ) + tuple(AlterableConfig(name=k, config_operation=i8(DELETE), value="") for k in delete)
        request = IncrementalAlterConfigsRequest(
            resources=(
                AlterConfigsResource(
                    resource_type=i8(resource_type), resource_name=name, configs=configs
                ),
            ),
            validate_only=False,
        )
        response = await self._call(self._node_for(resource_type, name), request)
        (r,) = response.responses
        _raise_for(int(r.error_code), r.error_message)

    async def alter(self, resource_type: int, name: str, configs: Mapping[str, str | None]) -> None:
        """AlterConfigs: the resource's dynamic configs become exactly `configs`."""
        from kio.schema.alter_configs.v2.request import (
            AlterableConfig,
            AlterConfigsRequest,
            AlterConfigsResource,
        )
        from kio.static.primitive import i8

        request = AlterConfigsRequest(
            resources=(
                AlterConfigsResource(
                    resource_type=i8(resource_type),
                    resource_name=name,
                    configs=tuple(AlterableConfig(name=k, value=v) for k, v in configs.items()),
                ),
            ),
            validate_only=False,
        )
        response = await self._call(self._node_for(resource_type, name), request)
        (r,) = response.responses
        _raise_for(int(r.error_code), r.error_message)

    def _node_for(self, resource_type: int, name: str) -> int | None:
        """A broker's own configs go to it (Kafka's ConstantNodeIdProvider); None: any."""
        if resource_type == BROKER and name:
            broker_id = int(name)
            if broker_id not in self.addresses:
                raise KafkaError(f"broker {broker_id} is not in the cluster metadata")
            return broker_id
        return None

    async def _call(self, node: int | None, request: Any) -> Any:
        """The answer of `node`, or of the first broker (by id) that answers."""
        nodes = [node] if node is not None else sorted(self.addresses)
        failure: KafkaError | None = None
        for n in nodes:
            conn = KafkaConnection(*self.addresses[n], client_id=self.client_id)
            try:
                return await conn.call(request, self.timeout_s)
            except NetworkError as e:
                failure = e
            finally:
                await conn.close()
        raise failure or NetworkError("no broker to ask")


def _raise_for(code: int, message: str | None) -> None:
    if code != ErrorCode.NONE:
        raise error_for_code(code, message or "")
