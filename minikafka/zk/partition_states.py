"""Partition state znodes (`/brokers/topics/<t>/partitions/<p>/state`): read by anyone,
created and updated by the controller (fenced), and the leader's own ISR changes (design
§8.5), all conditional on the znode's version."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.zk import codecs, paths
from minikafka.zk.errors import ControllerMovedError, ZkBadVersionError, ZkNoNodeError
from minikafka.zk.multi import Op
from minikafka.zk.session import ZkSession, log

__all__ = ["PartitionStateZnodes"]


class PartitionStateZnodes(ZkSession):
    """LeaderAndIsr in ZooKeeper, with its zk version for the next conditional write."""

    def get_partition_state(self, tp: TopicPartition) -> LeaderAndIsr | None:
        """The state znode as LeaderAndIsr with zk_version = the znode's version."""
        got = self._get(paths.partition_state(tp.topic, tp.partition))
        if got is None:
            return None
        data, stat = got
        return codecs.decode_partition_state(tp, data, zk_version=int(stat.version))

    def get_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """States of the partitions that have one (one pipelined round trip)."""
        got = self._get_many({tp: paths.partition_state(tp.topic, tp.partition) for tp in tps})
        return {
            tp: codecs.decode_partition_state(tp, data, zk_version=int(stat.version))
            for tp, (data, stat) in got.items()
        }

    def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderAndIsr], controller_epoch_zk_version: int
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """The controller's first write of new partitions' state znodes (with their missing
        `partitions` parents), all or nothing in one fenced multi. Returns the states with
        zk_version 0; ZkNodeExistsError if one exists, ZkNoNodeError if a topic does not.

        One multi must stay below jute.maxbuffer (about 4,000 partitions of a short topic
        name): the controller creates large topics in chunks (ZkRequestTooLargeError, with
        nothing written, otherwise)."""
        ops: list[Op] = []
        # Which `partitions` and `partitions/<p>` znodes exist: one listing per topic, all
        # pipelined (not one request per partition).
        topics = sorted({tp.topic for tp in states})
        listed = self._children_many({t: paths.partitions(t) for t in topics})
        for t in topics:
            if t not in listed:
                ops.append(Op("create", paths.partitions(t)))
        existing = {tp for tp in states if str(tp.partition) in listed.get(tp.topic, ())}
        for tp in sorted(states, key=lambda x: (x.topic, x.partition)):
            if tp not in existing:
                ops.append(Op("create", paths.partition(tp.topic, tp.partition)))
            ops.append(
                Op(
                    "create",
                    paths.partition_state(tp.topic, tp.partition),
                    codecs.encode_partition_state(states[tp]),
                )
            )
        if ops:
            self._multi(ops, controller_epoch_zk_version, "create partition states")
        return {
            tp: LeaderAndIsr(s.leader, s.leader_epoch, tuple(s.isr), s.controller_epoch, 0)
            for tp, s in states.items()
        }

    def update_partition_state_as_controller(
        self,
        tp: TopicPartition,
        new: LeaderAndIsr,
        expected_zk_version: int,
        controller_epoch_zk_version: int,
    ) -> LeaderAndIsr:
        """Fenced conditional write of a state znode (elections, ISR removal on failure).
        Returns `new` with its new zk_version; ZkBadVersionError if the znode moved on."""
        done, conflicts = self.update_partition_states_as_controller(
            {tp: (new, expected_zk_version)}, controller_epoch_zk_version
        )
        if tp in conflicts:
            raise ZkBadVersionError(
                f"partition state of {tp}: expected zk version {expected_zk_version}, "
                "the znode has another or is gone (re-read it and retry)"
            )
        return done[tp]

    def update_partition_states_as_controller(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        controller_epoch_zk_version: int,
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        """Batch form (Kafka's updateLeaderAndIsr): each write conditional on its expected zk
        version, all fenced. Returns (updated states, partitions whose zk version did not
        match or whose znode is gone); raises ControllerMovedError if our epoch is stale (Kafka fails the whole
        batch).

        The writes go in multis of many partitions, pipelined (thousands of single-write
        requests cost far more, in kazoo, than the same writes in a few multis); a multi
        fails as a whole when one version does not match, and its partitions are then
        written one multi each, to find which."""
        ops = {
            tp: Op(
                "set",
                paths.partition_state(tp.topic, tp.partition),
                codecs.encode_partition_state(new),
                expected,
            )
            for tp, (new, expected) in updates.items()
        }
        tp_of = {op.path: tp for tp, op in ops.items()}
        pending = [
            self._multi_async(chunk, controller_epoch_zk_version)
            for chunk in self._chunks(list(ops.values()))
        ]
        done: dict[TopicPartition, LeaderAndIsr] = {}
        one_by_one: list[TopicPartition] = []
        for all_ops, result in pending:
            chunk_tps = [tp_of[op.path] for op in all_ops[1:]]  # [0] is the fence check
            try:
                stats = self._finish_multi(all_ops, result, "update partition states")
            except (ZkBadVersionError, ZkNoNodeError):
                one_by_one += chunk_tps
                continue
            for tp, stat in zip(chunk_tps, stats, strict=True):
                done[tp] = self._written_state(updates[tp][0], stat)
        if not one_by_one:
            return done, []
        single = {
            tp: self._multi_async([ops[tp]], controller_epoch_zk_version) for tp in one_by_one
        }
        conflicts: list[TopicPartition] = []
        moved = False
        for tp, (all_ops, result) in single.items():
            try:
                stats = self._finish_multi(all_ops, result, f"update partition state of {tp}")
            except ControllerMovedError:
                moved = True
                continue
            except (ZkBadVersionError, ZkNoNodeError):
                # Changed, or deleted, since the state written over was read: the caller
                # reads it again.
                conflicts.append(tp)
                continue
            done[tp] = self._written_state(updates[tp][0], stats[0])
        if moved:
            raise ControllerMovedError(
                f"controller epoch znode is no longer at version {controller_epoch_zk_version}"
            )
        return done, conflicts

    @staticmethod
    def _written_state(new: LeaderAndIsr, stat: Any) -> LeaderAndIsr:
        return LeaderAndIsr(
            new.leader, new.leader_epoch, tuple(new.isr), new.controller_epoch, int(stat.version)
        )

    def update_partition_state_as_leader(
        self, tp: TopicPartition, new: LeaderAndIsr, expected_zk_version: int
    ) -> int | None:
        """A leader's own ISR change (design §8.5), conditional on its cached zk version.

        Returns the znode's new version, or None if someone else wrote it meanwhile (keep
        the old ISR and wait for the controller). If the znode already holds exactly `new`
        (our earlier attempt succeeded but its reply was lost), that is success too.
        """
        path = paths.partition_state(tp.topic, tp.partition)
        try:
            stat = self._call(
                f"update ISR of {tp}",
                self._kazoo().set_async(
                    path, codecs.encode_partition_state(new), version=expected_zk_version
                ),
            )
            return int(stat.version)
        except ZkBadVersionError:
            current = self.get_partition_state(tp)
        except ZkNoNodeError:
            log.warning("cannot update ISR of %s: %s does not exist", tp, path)
            return None
        if current is not None and (
            current.leader,
            current.leader_epoch,
            tuple(current.isr),
            current.controller_epoch,
        ) == (new.leader, new.leader_epoch, tuple(new.isr), new.controller_epoch):
            return current.zk_version
        log.info(
            "cached zkVersion %d not equal to that in zookeeper (%s), skip updating ISR of %s",
            expected_zk_version,
            None if current is None else current.zk_version,
            tp,
        )
        return None
