"""Blocking wrappers for scripts: each object runs its async client on a private event loop
in a background thread, so it works from plain code and from inside another event loop's
callbacks alike (but not from its own loop's thread, which would deadlock: that is refused).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, NamedTuple, Self, TypeVar

from minikafka.client.accumulator import RecordMetadata
from minikafka.client.admin import (
    Admin,
    ClusterDescription,
    NewPartitions,
    NewTopic,
    PartitionReplicas,
    TopicDescription,
)
from minikafka.client.cluster import DEFAULT_BOOTSTRAP
from minikafka.client.consumer import Consumer, ConsumerRecord
from minikafka.client.errors import IllegalStateError
from minikafka.client.producer import BytesLike, Producer
from minikafka.common import TopicPartition

T = TypeVar("T")


def _copy_outcome_to(
    out: concurrent.futures.Future[T],
) -> Callable[[asyncio.Future[T]], None]:
    """A done-callback that hands an asyncio future's outcome to a thread-safe future."""

    def copy(fut: asyncio.Future[T]) -> None:
        if fut.cancelled():
            out.cancel()
        elif (error := fut.exception()) is not None:
            out.set_exception(error)
        else:
            out.set_result(fut.result())

    return copy


def _mark_retrieved(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


class ProducerRecord(NamedTuple):
    """A record for `SyncProducer.send_many` (Kafka's ProducerRecord, without timestamp)."""

    topic: str
    value: BytesLike | None = None
    key: BytesLike | None = None
    partition: int | None = None
    headers: Sequence[tuple[str, BytesLike]] | None = None


_ClientT = TypeVar("_ClientT")


class _LoopThread:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._stopped = False

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        if self._stopped:
            coro.close()
            raise IllegalStateError("the client is closed")
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a sync client cannot be called from its own event loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def call(self, fn: Callable[[], T]) -> T:
        """Run a plain function on the loop thread (the async clients are not thread-safe)."""

        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class _SyncBase:
    _runner: _LoopThread

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    def _start_loop(self, name: str, make: Callable[[], _ClientT]) -> _ClientT:
        """Start this object's loop thread and build the async client on it (asyncio objects
        belong to the loop they are created on); the thread stops again if that fails."""
        self._runner = _LoopThread(name)

        async def create() -> _ClientT:
            return make()

        try:
            return self._runner.run(create())
        except BaseException:
            self._runner.stop()
            raise


class SyncProducer(_SyncBase):
    """`Producer` for blocking code: `send` returns a concurrent.futures.Future."""

    def __init__(self, bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP, **config: Any):
        self._producer = self._start_loop(
            "minikafka-sync-producer", lambda: Producer(bootstrap_servers, **config)
        )

    def send(
        self,
        topic: str,
        value: BytesLike | None = None,
        key: BytesLike | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, BytesLike]] | None = None,
        timestamp_ms: int | None = None,
    ) -> concurrent.futures.Future[RecordMetadata]:
        out: concurrent.futures.Future[RecordMetadata] = concurrent.futures.Future()

        async def send() -> None:
            fut = await self._producer.send(topic, value, key, partition, headers, timestamp_ms)
            fut.add_done_callback(_copy_outcome_to(out))

        self._runner.run(send())
        return out

    def send_and_wait(
        self,
        topic: str,
        value: BytesLike | None = None,
        key: BytesLike | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, BytesLike]] | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordMetadata:
        return self.send(topic, value, key, partition, headers, timestamp_ms).result()

    def send_many(
        self, records: Iterable[ProducerRecord]
    ) -> concurrent.futures.Future[list[RecordMetadata]]:
        """Queue many records in one trip to the producer's loop (a `send` per record pays a
        thread hop each). Returns once all are queued; the future completes when every one
        is acknowledged, with their metadata in order, or fails with the first failure.

        A record refused at once (its topic not in metadata after max.block.ms, a partition
        the topic does not have, a record too large) stops the rest from being queued: one
        such wait, not one per record."""
        items = list(records)
        out: concurrent.futures.Future[list[RecordMetadata]] = concurrent.futures.Future()

        async def send() -> None:
            futures: list[asyncio.Future[RecordMetadata]] = []
            for r in items:
                fut = await self._producer.send(r.topic, r.value, r.key, r.partition, r.headers)
                if fut.done() and not fut.cancelled() and fut.exception() is not None:
                    for queued in futures:  # they go on; their outcome is not awaited
                        queued.add_done_callback(_mark_retrieved)
                    out.set_exception(fut.exception())
                    return
                futures.append(fut)
            asyncio.gather(*futures).add_done_callback(_copy_outcome_to(out))

        self._runner.run(send())
        return out

    def partitions_for(self, topic: str) -> list[int]:
        return self._runner.run(self._producer.partitions_for(topic))

    def flush(self) -> None:
        self._runner.run(self._producer.flush())

    def close(self, timeout_ms: float | None = None) -> None:
        try:
            self._runner.run(self._producer.close(timeout_ms))
        except IllegalStateError:
            pass  # already closed
        finally:
            self._runner.stop()


class SyncConsumer(_SyncBase):
    def __init__(self, bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP, **config: Any):
        self._consumer = self._start_loop(
            "minikafka-sync-consumer", lambda: Consumer(bootstrap_servers, **config)
        )

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)
        self._runner.call(lambda: self._consumer.assign(tps))

    def assign_topic(self, topic: str, timeout_ms: float | None = None) -> list[TopicPartition]:
        return self._runner.run(self._consumer.assign_topic(topic, timeout_ms))

    def partitions_for(self, topic: str, timeout_ms: float | None = None) -> list[int]:
        return self._runner.run(self._consumer.partitions_for(topic, timeout_ms))

    def assignment(self) -> set[TopicPartition]:
        return self._runner.call(self._consumer.assignment)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._runner.call(lambda: self._consumer.seek(tp, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._runner.call(lambda: self._consumer.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._runner.call(lambda: self._consumer.seek_to_end(*partitions))

    def position(self, tp: TopicPartition, timeout_ms: float | None = None) -> int:
        return self._runner.run(self._consumer.position(tp, timeout_ms))

    def highwater(self, tp: TopicPartition) -> int | None:
        return self._runner.call(lambda: self._consumer.highwater(tp))

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        return self._runner.run(self._consumer.beginning_offsets(list(partitions), timeout_ms))

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        return self._runner.run(self._consumer.end_offsets(list(partitions), timeout_ms))

    def poll(self, timeout_ms: float) -> list[ConsumerRecord]:
        return self._runner.run(self._consumer.poll(timeout_ms))

    def close(self) -> None:
        try:
            self._runner.run(self._consumer.close())
        except IllegalStateError:
            pass
        finally:
            self._runner.stop()


class SyncAdmin(_SyncBase):
    def __init__(self, bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP, **config: Any):
        self._admin = self._start_loop(
            "minikafka-sync-admin", lambda: Admin(bootstrap_servers, **config)
        )

    def create_topics(
        self,
        new_topics: Sequence[NewTopic],
        timeout_ms: int | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        self._runner.run(
            self._admin.create_topics(new_topics, timeout_ms, validate_only=validate_only)
        )

    def delete_topics(self, names: Sequence[str], timeout_ms: int | None = None) -> None:
        self._runner.run(self._admin.delete_topics(names, timeout_ms))

    def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        self._runner.run(self._admin.create_partitions(new_partitions, timeout_ms, validate_only))

    def list_topics(self) -> list[str]:
        return self._runner.run(self._admin.list_topics())

    def describe_topics(self, names: Sequence[str] | None = None) -> list[TopicDescription]:
        return self._runner.run(self._admin.describe_topics(names))

    def describe_cluster(self) -> ClusterDescription:
        return self._runner.run(self._admin.describe_cluster())

    def describe_replicas(
        self, topics: Sequence[str] | None = None, timeout_ms: int | None = None
    ) -> list[PartitionReplicas]:
        return self._runner.run(self._admin.describe_replicas(topics, timeout_ms))

    def close(self) -> None:
        try:
            self._runner.run(self._admin.close())
        except IllegalStateError:
            pass
        finally:
            self._runner.stop()
