"""The reassign nemesis: partition moves through AlterPartitionReassignments (KIP-455), as
an operator runs `kafka-reassign-partitions.sh --execute` on a cluster that is failing.

A move picks one or more partitions of the topic and a new replica list for each
(`nemesis.choose_moves`: same size, distinct, on brokers registered in ZooKeeper, which are
those the controller takes as alive, and never the current list), and asks the controller,
found through Metadata and found again after NOT_CONTROLLER (`ControllerClient`).

Healing a move means the cluster is no longer moving that partition: it waits, at most
the heal's timeout (half an interval in a run), for the move to be done in ZooKeeper (/brokers/topics/<t> holds the target
with nothing adding or removing, and the target is in the ISR: Kafka's completion rule),
and otherwise cancels it (target None), which returns the partition to its old replicas.
A move that cannot finish is one whose new replica is on a broker that is down, paused or
cut off: it cannot join the ISR. Each move's end is recorded (`PartitionMove`): completed,
cancelled, refused (the controller's per-partition error), unanswered (no controller
answered: in doubt, since a paused controller still carries the request out when it resumes)
or unresolved (the cancel got no answer either). Whatever is still moving at the end, in
doubt or unresolved, finishes once the other faults are healed (`finish_moves`), before the
run checks that every ISR is whole. A completed move is followed by a preferred leader
election (ElectLeaders PREFERRED), as an operator does after a reorder: Kafka moves the
leader only when it leaves the replicas.

Partitions ZooKeeper shows moving are not moved again: their replica list there is the
target and the old replicas together, not a list of the topic's replication factor.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from minikafka.chaos.history import FaultWindow, History, MoveOutcome, PartitionMove
from minikafka.chaos.nemesis import choose_moves
from minikafka.chaos.workload import QUIET
from minikafka.client.controller_calls import RETRY_BACKOFF_S, ControllerClient
from minikafka.client.librdkafka import client_config, new_admin
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.zk.client import ZkClient, ZkError

CLIENT_ID = "minikafka-chaos-reassign"
# What a request to the controller may meet during the other faults: no broker answering
# (NetworkError is a KafkaError), no controller, a ZooKeeper read failing.
UNREACHABLE = (KafkaError, OSError, TimeoutError, ZkError)


@dataclass
class ActiveMove:
    start: float
    replicas: dict[int, tuple[int, ...]]  # partition -> its replicas before the move
    targets: dict[int, tuple[int, ...]]  # partition -> target, for the accepted moves

    def describe(self) -> str:
        return "; ".join(
            f"p{p} {','.join(map(str, self.replicas[p]))}->{','.join(map(str, t))}"
            for p, t in sorted(self.targets.items())
        )


class ReassignNemesis:
    """Moves partitions of `topic`; blocking ZooKeeper reads run in threads."""

    def __init__(
        self,
        bootstrap_servers: str,
        zk: ZkClient,
        topic: str,
        partitions: int,
        history: History,
        clock: Callable[[], float],
        *,
        request_timeout_s: float,
    ) -> None:
        self._bootstrap_servers = bootstrap_servers
        self._client = ControllerClient(
            bootstrap_servers, client_id=CLIENT_ID, timeout_s=request_timeout_s
        )
        self._zk = zk
        self._topic = topic
        self._partitions = partitions
        self._history = history
        self._clock = clock
        self.unresolved: list[PartitionMove] = []

    async def close(self) -> None:
        await self._client.close()

    def _tp(self, partition: int) -> TopicPartition:
        return TopicPartition(self._topic, partition)

    async def start(self, pick: int) -> tuple[ActiveMove | None, str]:
        """Ask for the moves `pick` chooses; (the accepted ones or None, what happened)."""
        start = self._clock()
        try:
            live = await asyncio.to_thread(self._zk.get_broker_ids)
            znode = await asyncio.to_thread(self._zk.get_assignment_and_version, self._topic)
        except ZkError as e:
            return None, f"ZooKeeper unreadable ({e}), skipped"
        if znode is None:
            return None, f"no topic {self._topic} in ZooKeeper, skipped"
        assignment = {p: r for p, r in znode.assignment.items() if p not in znode.reassigning}
        moves = choose_moves(assignment, live, pick)
        if not moves:
            moving = f" (moving: {sorted(znode.reassigning)})" if znode.reassigning else ""
            return None, f"no other replica set on the live brokers {live}{moving}, skipped"
        try:
            answers = await self._client.alter_partition_reassignments(
                {self._tp(p): target for p, target in moves.items()}
            )
        except UNREACHABLE as e:
            # Nothing known to have started; recorded, and the run goes on.
            for p, target in moves.items():
                self._history.moves.append(
                    PartitionMove(
                        p, start, assignment[p], target, MoveOutcome.UNANSWERED, self._clock(),
                        error=f"{type(e).__name__}: {e}",
                    )
                )  # fmt: skip
            return None, f"no controller answered ({type(e).__name__}: {e})"
        accepted: dict[int, tuple[int, ...]] = {}
        for p, target in moves.items():
            error = answers.get(self._tp(p))
            if error is None and self._tp(p) in answers:
                accepted[p] = target
                continue
            self._history.moves.append(
                PartitionMove(
                    p, start, assignment[p], target, MoveOutcome.REFUSED, self._clock(),
                    error=str(error) if error is not None else "no answer for the partition",
                )
            )  # fmt: skip
        if not accepted:
            return None, "every move refused"
        active = ActiveMove(start, {p: assignment[p] for p in moves}, accepted)
        return active, active.describe()

    def _done(self, targets: Mapping[int, tuple[int, ...]]) -> set[int]:
        """The partitions whose move is done as ZooKeeper shows it (blocking)."""
        znode = self._zk.get_assignment_and_version(self._topic)
        if znode is None:
            return set()
        tps = [self._tp(p) for p in targets]
        states = self._zk.get_partition_states(tps)
        return {
            p
            for p, target in targets.items()
            if znode.assignment.get(p) == target
            and p not in znode.reassigning
            and self._tp(p) in states
            and set(target) <= set(states[self._tp(p)].isr)
        }

    async def heal(self, active: ActiveMove, timeout_s: float) -> str:
        """Wait for the moves to be done, at most `timeout_s`; cancel those that are not.
        Records each move's end; returns a summary for the log."""
        pending = dict(active.targets)
        done: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while pending:
            with contextlib.suppress(ZkError):  # read again until the deadline
                done |= await asyncio.to_thread(self._done, pending)
            for p in done:
                pending.pop(p, None)
            if not pending or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.1)
        outcomes: dict[int, tuple[MoveOutcome, str | None]] = {
            p: (MoveOutcome.COMPLETED, None) for p in done
        }
        if pending:
            outcomes.update(await self._cancel(pending))
        try:
            final = await asyncio.to_thread(self._zk.get_assignment, self._topic) or {}
        except ZkError:
            final = {}
        completed = sorted(p for p, (o, _) in outcomes.items() if o is MoveOutcome.COMPLETED)
        elections = await self._elect_preferred(completed, timeout_s) if completed else {}
        end = self._clock()
        for p, target in sorted(active.targets.items()):
            outcome, error = outcomes[p]
            move = PartitionMove(
                p,
                active.start,
                active.replicas[p],
                target,
                outcome,
                end,
                final.get(p),
                error,
                elections.get(p),
            )
            if outcome is MoveOutcome.UNRESOLVED:
                self.unresolved.append(move)
            else:
                self._history.moves.append(move)
        return ", ".join(
            f"p{p} {outcomes[p][0]}"
            + (f" (preferred leader: {elections[p]})" if p in elections else "")
            for p in sorted(outcomes)
        )

    async def _elect_preferred(self, partitions: list[int], timeout_s: float) -> dict[int, str]:
        """ElectLeaders PREFERRED for the moved partitions, as an operator does after a
        reassignment (Kafka moves the leader only if it left the replicas): partition ->
        "elected", "not needed" or the error."""
        from confluent_kafka import ElectionType
        from confluent_kafka import TopicPartition as RdTopicPartition

        timeout_s = max(timeout_s, 1.0)
        deadline = time.monotonic() + timeout_s
        out: dict[int, str] = {}
        asking = list(partitions)
        while asking:
            # A new client each time: librdkafka's cached controller is the one it met
            # first, and a controller that moved answers NOT_CONTROLLER per partition.
            config = {**QUIET, "socket.timeout.ms": int(timeout_s * 1000)}
            admin = new_admin(client_config(self._bootstrap_servers, config))
            asked = [RdTopicPartition(self._topic, p) for p in asking]
            try:
                future = admin.elect_leaders(ElectionType.PREFERRED, asked)
                result = await asyncio.wait_for(
                    asyncio.wrap_future(future), max(0.1, deadline - time.monotonic())
                )
            except TimeoutError:
                out.update({p: f"no answer in {timeout_s:g} s" for p in asking})
                break
            except Exception as e:  # librdkafka's KafkaException: recorded
                out.update({p: f"no answer ({type(e).__name__}: {e})" for p in asking})
                break
            asking = []
            for tp, error in result.items():
                if error is None:
                    out[tp.partition] = "elected"
                elif error.code() == ErrorCode.ELECTION_NOT_NEEDED:
                    out[tp.partition] = "not needed"
                else:
                    out[tp.partition] = f"{error.name()}: {error.str()}"
                    if error.code() == ErrorCode.NOT_CONTROLLER:
                        asking.append(tp.partition)
            if asking:
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(RETRY_BACKOFF_S)
        return out

    async def _cancel(
        self, pending: Mapping[int, tuple[int, ...]]
    ) -> dict[int, tuple[MoveOutcome, str | None]]:
        try:
            answers = await self._client.alter_partition_reassignments(
                {self._tp(p): None for p in pending}
            )
        except UNREACHABLE as e:
            why = f"cancel got no answer ({type(e).__name__}: {e})"
            return {p: (MoveOutcome.UNRESOLVED, why) for p in pending}
        out: dict[int, tuple[MoveOutcome, str | None]] = {}
        for p in pending:
            error = answers.get(self._tp(p))
            if error is None and self._tp(p) in answers:
                out[p] = (MoveOutcome.CANCELLED, None)
            elif (
                isinstance(error, KafkaError)
                and error.code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
            ):
                # It finished between the last look and the cancel.
                out[p] = (MoveOutcome.COMPLETED, None)
            else:
                out[p] = (MoveOutcome.UNRESOLVED, f"cancel refused: {error}")
        return out

    async def finish_moves(self, timeout_s: float) -> bool:
        """After every other fault is healed: wait for the topic's reassignments still in
        progress to end, and record the unresolved moves' outcome then. False if some are
        still in progress after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        settled = False
        while not settled and time.monotonic() < deadline:
            settled = await self._settled()
            if not settled:
                await asyncio.sleep(0.2)
        try:
            final = await asyncio.to_thread(self._zk.get_assignment, self._topic) or {}
        except ZkError:
            final = {}
        for move in self.unresolved:
            self._history.moves.append(
                PartitionMove(
                    move.partition, move.start, move.replicas, move.target,
                    MoveOutcome.UNRESOLVED, self._clock(), final.get(move.partition), move.error,
                )
            )  # fmt: skip
        self.unresolved.clear()
        return settled

    async def _settled(self) -> bool:
        """Nothing of the topic moving: the controller lists no reassignment of it, and
        ZooKeeper has no partition of it adding or removing replicas."""
        try:
            ongoing = await self._client.list_partition_reassignments(
                [self._tp(p) for p in range(self._partitions)]
            )
            znode = await asyncio.to_thread(self._zk.get_assignment_and_version, self._topic)
        except UNREACHABLE:
            return False  # unknown: ask again
        return not ongoing and znode is not None and not znode.reassigning


def move_window(active: ActiveMove, end: float) -> FaultWindow:
    return FaultWindow("reassign", active.describe(), active.start, end)
