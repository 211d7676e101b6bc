"""Idempotent producers' state per partition (Kafka's ProducerStateManager, KIP-98 without
transactions). Pure: the log feeds it batch headers and asks it about a produce.

An idempotent producer numbers its records per partition: a batch carries its producer id,
producer epoch and base sequence, and its records take the sequences after it. For each
producer the partition keeps its epoch and the sequences and offsets of its last five
batches (a producer has at most five requests in flight, so a retry is one of them).

- A leader asks `check_leader_append` before appending a client's batch:
  - an epoch below the producer's is fenced (INVALID_PRODUCER_EPOCH);
  - a batch with the sequences of one of the last five is a retry whose first try was
    written: the answer is that batch's offsets, and nothing is appended (Kafka answers a
    duplicate with success and the original offsets);
  - in the producer's current epoch the batch must follow the last sequence (with the
    wrap from 2^31-1 to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER; a new epoch starts at 0.
  - A producer the partition does not know (new, or its batches removed by retention) is
    accepted at any sequence, as Kafka does.
- Every appended batch (leader, follower, or replayed from the log when the log is opened
  or truncated) goes through `update`; followers never check, they copy the leader.
- A producer whose last batch's timestamp is `producer.id.expiration.ms` old is forgotten
  (`remove_expired`, Kafka's removeExpiredProducers): its next batch is a new producer's.
- The log saves the state in snapshot files and loads it from them (`producer_snapshot.py`:
  `entries` and `load`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from minikafka.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceError

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_TIMESTAMP: Final = -1
MAX_SEQUENCE: Final = 2**31 - 1
# Kafka's NUM_BATCHES_TO_RETAIN: max.in.flight.requests.per.connection may be at most 5
# with idempotence, so a retry is always one of the last five batches.
BATCHES_TO_RETAIN: Final = 5


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_timestamp(self) -> int:
        """The max timestamp of the producer's last batch (what expiry goes by)."""
        return self.batches[-1].max_timestamp if self.batches else NO_TIMESTAMP

    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        """Kafka's isProducerExpired (without transactions): the last batch is at least
        `expiration_ms` older than `now_ms`."""
        return now_ms - self.last_timestamp >= expiration_ms

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


def last_sequence(base_sequence: int, offsets: int) -> int:
    """The sequence of the last record of a batch spanning `offsets` offsets (its last offset
    delta + 1: Kafka's lastSequence, which still holds after the log cleaner removed records
    from it). Sequences wrap at 2^31-1, as Kafka's."""
    return (base_sequence + offsets - 1) % (MAX_SEQUENCE + 1)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def clear(self) -> None:
        self.producers.clear()

    def entries(self) -> list[ProducerEntry]:
        """Every producer's entry, by producer id (what a snapshot holds)."""
        return [self.producers[pid] for pid in sorted(self.producers)]

    def load(self, entries: Iterable[ProducerEntry]) -> None:
        """Replace the state with these entries (read from a snapshot)."""
        self.producers = {e.producer_id: e for e in entries}

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget the producers whose last batch is `expiration_ms` older than `now_ms`
        (Kafka's removeExpiredProducers); returns their ids. A forgotten producer's next
        batch is accepted at any sequence, as a new producer's."""
        expired = [pid for pid, e in self.producers.items() if e.is_expired(now_ms, expiration_ms)]
        for pid in expired:
            del self.producers[pid]
        return expired

    def check_leader_append(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        """A client's batch on the leader: None to append it, the original batch's metadata
        for a duplicate; raises InvalidProducerEpochError or OutOfOrderSequenceError."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id}'s epoch {epoch} is older than its current {entry.epoch}"
            )
        duplicate = entry.duplicate_of(epoch, first_seq, last_seq)
        if duplicate is not None:
            return duplicate
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {producer_id} in new epoch {epoch} starts at sequence "
                    f"{first_seq}, not 0"
                )
        elif entry.last_seq != NO_SEQUENCE and not in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"producer {producer_id} (epoch {epoch}): sequence {first_seq} does not "
                f"follow {entry.last_seq}"
            )
        return None

    def update(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
    ) -> None:
        """An appended batch of an idempotent producer (from any origin)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        if epoch != entry.epoch:
            # A new epoch starts a new sequence: the old epoch's batches are no duplicates.
            entry.epoch = epoch
            entry.batches.clear()
        entry.batches.append(
            BatchMetadata(first_seq, last_seq, first_offset, last_offset, max_timestamp)
        )
