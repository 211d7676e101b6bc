"""Fetch, as consumers send it (followers replicate over the inter-broker RPC).

The response is written by hand (protocol/kafka/fetch_response.py): the log's record
batches go out as it hands them over, file regions sent with sendfile (zero-copy, as
Kafka's)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import cast

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.fetch_response import (
    FetchPartitionData,
    FetchTopicData,
    RecordsChunk,
    encode_fetch_response,
)
from minikafka.replication.replica_manager import ClientMetadata
from minikafka.rpc import messages as m
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.fetch import FetchRequest, FetchTopic
from minikafka.server.kafka_api.registry import ApiFamily, EncodedResponse, RequestContext, api
from minikafka.server.kafka_api.topic_ids import ZERO_UUID, topic_named, topic_uuid

FETCH = 1

# Consumers send replica id -1, tools reading any replica up to its LEO Kafka's debugging
# id -2 (FetchRequest.DEBUGGING_CONSUMER_ID); anything else on a client listener is refused
# (followers replicate over the inter-broker RPC).
CONSUMER_REPLICA_ID = m.CONSUMER_REPLICA_ID
DEBUG_REPLICA_ID = m.DEBUG_REPLICA_ID


class FetchApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(FETCH, "Fetch", versions=(4, 17))
    async def fetch(self, req: FetchRequest, ctx: RequestContext) -> EncodedResponse:
        error_code, session_id, topics = await self._fetch(ctx, req)
        return EncodedResponse(
            encode_fetch_response(
                ctx.api_version, ctx.correlation_id, error_code, session_id, topics
            )
        )

    async def _fetch(
        self, ctx: RequestContext, req: FetchRequest
    ) -> tuple[int, int, list[FetchTopicData]]:
        """(error code, session id, topics) of the response."""
        version = ctx.api_version
        # v15+ (KIP-903) send it in replica_state.
        replica_id = req.replica_id if req.replica_state is None else req.replica_state.replica_id
        if replica_id not in (CONSUMER_REPLICA_ID, DEBUG_REPLICA_ID):
            # A follower's fetch: Kafka wants CLUSTER_ACTION and answers every partition
            # TOPIC_AUTHORIZATION_FAILED without it. Allowed, it is still refused: followers
            # here replicate over the inter-broker RPC, never with Kafka's Fetch.
            authorizer = self.apis.authorizer
            refused = authorizer.enabled and not authorizer.authorize_cluster(
                ctx.session, AclOperation.CLUSTER_ACTION, request="Fetch"
            )
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED if refused else ErrorCode.INVALID_REQUEST
            return 0, 0, [_fetch_topic_error(t, error) for t in req.topics]
        cache = self.apis.cache
        # v13+ name topics by id (KIP-516): each id is resolved to its topic here, and an id
        # no topic has is answered UNKNOWN_TOPIC_ID (the fetch session never sees it).
        known: list[tuple[str, FetchTopic]] = []
        unknown: list[FetchTopic] = []
        ids: dict[str, uuid.UUID] = {}
        for t in req.topics:
            name = t.topic if version < 13 else topic_named(cache, t.topic_id)
            if name is None:
                unknown.append(t)
                continue
            known.append((name, t))
            if version >= 13 and t.topic_id is not None:
                ids[name] = t.topic_id
        forgotten: list[m.ForgottenTopic] = []
        for f in req.forgotten_topics_data:
            forgotten_name = f.topic if version < 13 else topic_named(cache, f.topic_id)
            if forgotten_name is not None:
                forgotten.append(m.ForgottenTopic(forgotten_name, list(f.partitions)))
        internal = m.FetchRequest(
            replica_id=replica_id,
            max_wait_ms=req.max_wait,
            min_bytes=req.min_bytes,
            max_bytes=req.max_bytes,
            topics=[
                m.FetchTopic(
                    name,
                    [
                        m.FetchPartition(
                            p.partition,
                            p.fetch_offset,
                            p.partition_max_bytes,
                            p.current_leader_epoch,
                            p.log_start_offset,
                        )
                        for p in t.partitions
                    ],
                )
                for name, t in known
            ],
            # Before v7 (no sessions) the model's defaults are Kafka's: no session, a
            # sessionless full fetch.
            session_id=req.session_id,
            session_epoch=req.session_epoch,
            forgotten_topics=forgotten,
        )
        resp = await self.apis.fetch(internal, self._readable(ctx), self._client_metadata(ctx, req))
        # minikafka's own tools (the debugging replica id, which no Kafka client sends) read
        # a replica from its log start: they keep the replica's ends with an error.
        ends_with_errors = replica_id == m.DEBUG_REPLICA_ID
        topics = [
            FetchTopicData(
                t.name,
                ids.get(t.name) or topic_uuid(cache, t.name),
                [
                    FetchPartitionData(
                        p.partition,
                        p.error_code,
                        # Unknown (-1) with any error, as Kafka's readFromLocalLog answers:
                        # librdkafka takes a follower's OFFSET_OUT_OF_RANGE as the follower
                        # being behind (back to the leader) only for an offset past this HW,
                        # and resets the offset otherwise (the replica's ends stay internal).
                        p.high_watermark
                        if p.error_code == ErrorCode.NONE or ends_with_errors
                        else -1,
                        p.log_start_offset
                        if p.error_code == ErrorCode.NONE or ends_with_errors
                        else -1,
                        # Empty, never null, records on an error, as Kafka's MemoryRecords.EMPTY:
                        # librdkafka fails to parse a null record set.
                        b"" if p.records is None else cast(RecordsChunk, p.records),
                        p.preferred_read_replica,
                    )
                    for p in t.partitions
                ],
            )
            for t in resp.topics
        ]
        topics += [_fetch_topic_error(t, ErrorCode.UNKNOWN_TOPIC_ID) for t in unknown]
        return resp.error_code, resp.session_id, topics

    def _client_metadata(self, ctx: RequestContext, req: FetchRequest) -> ClientMetadata | None:
        """Kafka's ClientMetadata: from v11 (KIP-392) a consumer names its rack, and may
        read followers. The brokers' racks on this listener only matter to a rack-aware
        replica selector."""
        if ctx.api_version < 11:
            return None
        racks: dict[int, str | None] = {}
        if req.rack_id and self.apis.config.replica_selector_class:
            racks = {b.node_id: b.rack for b in self.apis.cache.alive_brokers_on(ctx.listener)}
        return ClientMetadata(req.rack_id, racks)

    def _readable(self, ctx: RequestContext) -> Callable[[str], bool] | None:
        """A consumer needs READ on each topic it fetches (Kafka's handleFetchRequest), the
        ones its fetch session holds too: the replica manager asks this of every partition
        of the fetch, once per topic per request, and answers the refused ones
        TOPIC_AUTHORIZATION_FAILED. None without an authorizer (everything readable)."""
        authorizer = self.apis.authorizer
        if not authorizer.enabled:
            return None
        return _memoized(
            lambda topic: authorizer.authorize(
                ctx.session, AclOperation.READ, ResourceType.TOPIC, topic, request="Fetch"
            )
        )


def _memoized(decide: Callable[[str], bool]) -> Callable[[str], bool]:
    """`decide`, asked once per topic."""
    decided: dict[str, bool] = {}

    def readable(topic: str) -> bool:
        allowed = decided.get(topic)
        if allowed is None:
            allowed = decided[topic] = decide(topic)
        return allowed

    return readable


def _fetch_topic_error(t: FetchTopic, code: int) -> FetchTopicData:
    """Every partition of a request's fetch topic (any version) answered `code`."""
    return FetchTopicData(
        t.topic,
        t.topic_id or ZERO_UUID,
        [FetchPartitionData(p.partition, int(code), -1, -1, b"") for p in t.partitions],
    )
