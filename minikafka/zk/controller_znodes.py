"""The controller's znodes: the election (`/controller`, `/controller_epoch`, design §8.1)
and resignation, and what the controller is notified through: ISR change notifications
(`/isr_change_notification`) and the preferred replica election
(`/admin/preferred_replica_election`) and the ZooKeeper path of partition reassignment
(`/admin/reassign_partitions`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence

from minikafka.common import TopicPartition
from minikafka.zk import codecs, paths
from minikafka.zk.errors import ZkBadVersionError, ZkError, ZkNodeExistsError, ZkNoNodeError
from minikafka.zk.multi import Op
from minikafka.zk.session import ZkSession

# An ISR change notification's data stays below this (ZooKeeper's jute.maxbuffer is 1 MiB);
# an entry costs its topic name and this much more: `{"topic":"","partition":2147483647},`.
ISR_CHANGE_NOTIFICATION_BYTES = 256 * 1024
ISR_CHANGE_ENTRY_BYTES = 40

__all__ = ["ControllerZnodes"]


class ControllerZnodes(ZkSession):
    """The controller's election and the notifications it consumes."""

    # --- controller --------------------------------------------------------------------

    def get_controller_id(self) -> int | None:
        got = self._get(paths.controller())
        return None if got is None else codecs.decode_controller(got[0])

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, `/controller_epoch` zk version) or None before any election."""
        got = self._get(paths.controller_epoch())
        if got is None:
            return None
        data, stat = got
        return codecs.decode_controller_epoch(data), int(stat.version)

    def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        """Kafka's registerControllerAndIncrementControllerEpoch (design §8.1).

        Returns (new controller epoch, its zk version), which must fence every later
        controller write, or None if another broker is controller.
        """
        epoch_path, ctrl_path = paths.controller_epoch(), paths.controller()
        with contextlib.suppress(ZkNodeExistsError):
            self._call(
                f"create {epoch_path}",
                self._create_async(epoch_path, codecs.encode_controller_epoch(0)),
            )
        if self._stat(ctrl_path) is not None:
            return self._our_controllership(broker_id, None)
        got = self.get_controller_epoch()
        if got is None:  # deleted behind our back: nobody does that, but do not crash
            raise ZkError(f"{epoch_path} vanished during the controller election")
        epoch, version = got
        ops = [
            Op("create", ctrl_path, codecs.encode_controller(broker_id), ephemeral=True),
            Op("set", epoch_path, codecs.encode_controller_epoch(epoch + 1), version),
        ]
        try:
            results = self._multi(ops, None, f"elect broker {broker_id} controller")
        except (ZkNodeExistsError, ZkBadVersionError):
            # Lost a race, or our own earlier attempt won but its reply was lost.
            return self._our_controllership(broker_id, epoch + 1)
        return epoch + 1, int(results[1].version)

    def _our_controllership(
        self, broker_id: int, expected_epoch: int | None
    ) -> tuple[int, int] | None:
        got = self._get(paths.controller())
        epoch = self.get_controller_epoch()
        if got is None or epoch is None:
            return None
        data, stat = got
        ours = (
            codecs.decode_controller(data) == broker_id
            and int(stat.ephemeralOwner) == self.session_id
            and (expected_epoch is None or epoch[0] == expected_epoch)
        )
        return epoch if ours else None

    def delete_controller(self, controller_epoch_zk_version: int) -> None:
        """Resign: delete `/controller` (fenced), so that every broker re-runs the election."""
        with contextlib.suppress(ZkNoNodeError):
            self._multi(
                [Op("delete", paths.controller())],
                controller_epoch_zk_version,
                "resign controller",
            )

    # --- ISR change notifications ------------------------------------------------------

    def create_isr_change_notification(self, tps: Iterable[TopicPartition]) -> str:
        """Persistent sequential `/isr_change_notification/isr_change_<seq>`; returns its name."""
        created = self._call(
            "create ISR change notification",
            self._create_async(
                paths.isr_change_notification_prefix(),
                codecs.encode_isr_change_notification(tps),
                sequence=True,
            ),
        )
        return str(created).rsplit("/", 1)[-1]

    def create_isr_change_notifications(self, tps: Iterable[TopicPartition]) -> list[str]:
        """`create_isr_change_notification` in as many notifications as it takes to keep
        each one's data below ISR_CHANGE_NOTIFICATION_BYTES, created pipelined; returns
        their names. A broker catching up 100,000 partitions has that many changes to tell,
        about 4 MB in one notification: past jute.maxbuffer (1 MiB) ZooKeeper drops the
        connection, and the notification would be retried, and refused, forever."""
        chunks: list[list[TopicPartition]] = []
        size = 0
        for tp in tps:
            cost = len(tp.topic.encode()) + ISR_CHANGE_ENTRY_BYTES
            if not chunks or size + cost > ISR_CHANGE_NOTIFICATION_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(tp)
            size += cost
        pending = [
            self._create_async(
                paths.isr_change_notification_prefix(),
                codecs.encode_isr_change_notification(chunk),
                sequence=True,
            )
            for chunk in chunks
        ]
        return [
            str(self._call("create ISR change notification", result)).rsplit("/", 1)[-1]
            for result in pending
        ]

    def get_isr_change_notifications(self) -> list[str]:
        """Child names, oldest first (the sequence number sorts them)."""
        names = self._children(paths.isr_change_notifications())
        return sorted(n for n in names if n.startswith(paths.ISR_CHANGE_PREFIX))

    def read_isr_change_notification(self, name: str) -> list[TopicPartition]:
        got = self._get(paths.isr_change_notification(name))
        return [] if got is None else codecs.decode_isr_change_notification(got[0])

    def delete_isr_change_notifications(
        self, names: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        """Delete processed notifications (fenced); already deleted ones are fine."""
        ops = [Op("delete", paths.isr_change_notification(n)) for n in names]
        self._fenced_delete_existing(ops, controller_epoch_zk_version)

    # --- preferred replica election ----------------------------------------------------

    def create_preferred_replica_election(self, tps: Iterable[TopicPartition]) -> None:
        """Admin request; ZkNodeExistsError while a previous one is still in progress."""
        path = paths.preferred_replica_election()
        self._call(
            f"create {path}",
            self._create_async(path, codecs.encode_preferred_replica_election(tps), makepath=True),
        )

    def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        got = self._get(paths.preferred_replica_election())
        return None if got is None else codecs.decode_preferred_replica_election(got[0])

    def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> None:
        ops = [Op("delete", paths.preferred_replica_election())]
        self._fenced_delete_existing(ops, controller_epoch_zk_version)

    # --- partition reassignment through ZooKeeper ------------------------------------------

    def create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """An admin's reassignment; ZkNodeExistsError while one is still in progress (Kafka's
        `createPartitionReassignment`, as the --zookeeper tool writes it)."""
        path = paths.reassign_partitions()
        self._call(
            f"create {path}",
            self._create_async(
                path, codecs.encode_partition_reassignment(reassignment), makepath=True
            ),
        )

    def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        got = self._get(paths.reassign_partitions())
        return None if got is None else codecs.decode_partition_reassignment(got[0])

    def set_or_delete_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Sequence[int]],
        controller_epoch_zk_version: int,
    ) -> None:
        """The controller's fenced rewrite of what is left to move; deleted when nothing is."""
        path = paths.reassign_partitions()
        if not reassignment:
            self._fenced_delete_existing([Op("delete", path)], controller_epoch_zk_version)
            return
        data = codecs.encode_partition_reassignment(reassignment)
        # Deleted meanwhile by someone else: the reassignments already started go on from
        # the topics' znodes, and there is nothing left to write.
        with contextlib.suppress(ZkNoNodeError):
            self._multi([Op("set", path, data)], controller_epoch_zk_version, f"update {path}")
