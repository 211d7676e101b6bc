"""The JSON a chaos run writes (history.json, report.json's "history" and "result"): pinned
by golden values that the hand-written to_dict methods produced before one mechanism
replaced them, and read back with the coercions and defaults older files need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minikafka.chaos import (
    AssignmentChange,
    ConsumerRead,
    ControllerObservation,
    DrainedPartition,
    FaultWindow,
    GroupAssignment,
    GroupCommit,
    GroupOffsetRead,
    GroupRead,
    History,
    IsrObservation,
    LeaderObservation,
    MoveOutcome,
    Outcome,
    PartitionMove,
    ProduceAttempt,
    ProducerMode,
    ReplicaLog,
    check,
)
from minikafka.chaos.history import JsonDict, from_json, to_json
from minikafka.chaos.runner import ChaosReport, write_report


def every_event_history() -> History:
    """One of every event, with values that make `check` report something of every kind
    (partition 0: the single-consumer anomalies; 1: a duplicate and a null; 2: the final
    drain and the group's)."""
    ok = Outcome.OK
    attempts = [
        ProduceAttempt(10, 0.99, ok, 1.0, 0, 0),
        ProduceAttempt(11, 1.99, "ok", 2.0, 0, 1, producer=1),
        ProduceAttempt(12, 0.5, Outcome.FAIL, 0.6, error="NOT_ENOUGH_REPLICAS"),  # read anyway
        ProduceAttempt(13, 0.7, Outcome.INFO, 0.9, error="REQUEST_TIMED_OUT"),  # read: recovered
        ProduceAttempt(14, 3.0, Outcome.INFO),  # still pending at the end
        ProduceAttempt(15, 1.0, ok, 1.1, 0, 6),  # read only at offset 4: moved
        ProduceAttempt(16, 1.2, ok, 1.3, 0, 7),  # 16 and 17 acknowledged at one offset
        ProduceAttempt(17, 1.2, ok, 1.4, 0, 7, producer=2),
        ProduceAttempt(18, 1.5, ok, 1.6, 0, 8),  # never read, offset 8 passed: lost
        ProduceAttempt(19, 1.5, ok, 1.7, 0, 10),
        ProduceAttempt(20, 1.5, ok, 1.8, 0, 9),
        ProduceAttempt(21, 4.0, ok, 0.1 + 0.2 + 4, 0, 20),  # beyond every read: unseen
        *(ProduceAttempt(30 + o, 2.0, ok, 2.5, 2, o) for o in range(6)),
    ]
    reads = [
        ConsumerRead(10.0, 0, 0, 10, 1),
        ConsumerRead(10.1, 0, 1, 11, 1),
        ConsumerRead(10.2, 0, 2, 13, 1),
        ConsumerRead(10.3, 0, 3, 12, 1),
        ConsumerRead(10.4, 0, 4, 15, 1),
        ConsumerRead(10.5, 0, 5, 777, 1),  # no attempt wrote it
        ConsumerRead(10.6, 0, 6, "ff00", 1),  # undecodable
        ConsumerRead(10.7, 0, 7, 16, 1),
        ConsumerRead(10.8, 0, 10, 19, 1),  # skipped 8 and 9
        ConsumerRead(10.9, 0, 9, 20, 1),  # backwards
        ConsumerRead(11.0, 0, 7, 17, 2),  # offset 7 read with two values
        ConsumerRead(11.1, 1, 0, 10, 3),  # 10 again: a duplicate
        ConsumerRead(11.2, 1, 1, None, 3),
        *(ConsumerRead(12.0, 2, o, 30 + o) for o in range(6)),
    ]
    return History(
        "orders",
        attempts,
        reads,
        drained=[DrainedPartition(1, 0, 2, 20.0), DrainedPartition(2, 0, 6, 21.0, 0)],
        faults=[
            FaultWindow("kill", "broker-1", 1.2, 1.5),
            FaultWindow("pause", "broker-2", 1.6),
            FaultWindow("controller", "zookeeper", 3, 3),  # ints where floats belong
        ],
        leaders=[
            LeaderObservation(0.5, 0, 1, 5),
            LeaderObservation(1.5, 0, 2, 6),
            LeaderObservation(2.5, 0, 1, 4),  # epoch regression
            LeaderObservation(2.6, 1, 1, 3),
            LeaderObservation(2.7, 1, 3, 3),  # two leaders in one epoch
        ],
        controllers=[
            ControllerObservation(0.1, 1, 1),
            ControllerObservation(2.0, -1, 1),
            ControllerObservation(2.1, 2, 2),
            ControllerObservation(2.2, 1, 1),  # controller epoch regression
        ],
        isr=[IsrObservation(0.5, 0, (1, 2, 3)), IsrObservation(1.4, 0, [3, 2])],
        replica_logs=[
            ReplicaLog(1, 1, 2, {1: None, 0: 10}),
            ReplicaLog(2, 1, 2, {0: 10, 1: "zz", 5: 99}),  # offset 1 diverges
        ],
        start=0.0,
        end=5.0,
        meta={"seed": 7, "nemesis": ["kill", "pause"], "options": {"rate": 100.0, "x": None}},
        group="chaos-orders",
        group_reads=[
            GroupRead(13.0, 0, 2, 0, 30),
            GroupRead(13.1, 0, 2, 1, 31),  # offset 2 is never given: a group loss
            GroupRead(13.2, 1, 2, 3, 33),
            GroupRead(13.3, 1, 2, 4, 99),  # another value than the final log's
            GroupRead(13.4, 1, 2, 5, None),
        ],
        group_commits=[
            GroupCommit(0, 20.0, ok, 20.01, {2: 5}),
            GroupCommit(1, 21.0, ok, 21.1, {2: 3}),  # below an acknowledged 5: a regression
            GroupCommit(1, 22.0, ok, 22.5, {2: 4, 0: 1}),  # sent first, applied last
            GroupCommit(1, 22.1, ok, 22.2, {2: 6}),
            GroupCommit(0, 23.0, "info", 24.0, {2: 6}, errors={2: "REQUEST_TIMED_OUT: x"}),
            GroupCommit(0, 24.0, Outcome.FAIL, 24.5, {}, error="ILLEGAL_GENERATION: x"),
            GroupCommit(0, 25.0, Outcome.INFO, None, {2: 6}),
        ],
        group_assignments=[
            GroupAssignment(5.0, 0, AssignmentChange.ASSIGN, (2, 0), (2, 0, 1)),
            GroupAssignment(6.0, 0, "revoke", [0], [1, 2]),
            GroupAssignment(7.0, 1, AssignmentChange.LOST, (), ()),
        ],
        group_offset_reads=[GroupOffsetRead(19.0, 19.5, {}), GroupOffsetRead(30.0, 30.1, {2: 4})],
        moves=[
            PartitionMove(
                0,
                2.0,
                (1, 2, 3),
                (3, 1, 2),
                MoveOutcome.COMPLETED,
                3.5,
                (3, 1, 2),
                election="elected",
            ),
            PartitionMove(1, 2.0, [1, 2, 3], [1, 2, 4], "cancelled", 4.0, [2, 1, 3]),
            PartitionMove(2, 3, (1, 2, 3), (2, 3, 4), "unanswered", 3, error="NetworkError: x"),
        ],
    )


# --- golden values: what the hand-written to_dict methods produced -------------------------

HISTORY_JSON: JsonDict = {
    "topic": "orders",
    "start": 0.0,
    "end": 5.0,
    "meta": {"seed": 7, "nemesis": ["kill", "pause"], "options": {"rate": 100.0, "x": None}},
    "producer": "plain",
    "attempts": [
        {
            "value": 10,
            "invoke_time": 0.99,
            "outcome": "ok",
            "complete_time": 1.0,
            "partition": 0,
            "offset": 0,
            "producer": 0,
            "error": None,
        },
        {
            "value": 11,
            "invoke_time": 1.99,
            "outcome": "ok",
            "complete_time": 2.0,
            "partition": 0,
            "offset": 1,
            "producer": 1,
            "error": None,
        },
        {
            "value": 12,
            "invoke_time": 0.5,
            "outcome": "fail",
            "complete_time": 0.6,
            "partition": None,
            "offset": None,
            "producer": 0,
            "error": "NOT_ENOUGH_REPLICAS",
        },
        {
            "value": 13,
            "invoke_time": 0.7,
            "outcome": "info",
            "complete_time": 0.9,
            "partition": None,
            "offset": None,
            "producer": 0,
            "error": "REQUEST_TIMED_OUT",
        },
        {
            "value": 14,
            "invoke_time": 3.0,
            "outcome": "info",
            "complete_time": None,
            "partition": None,
            "offset": None,
            "producer": 0,
            "error": None,
        },
        {
            "value": 15,
            "invoke_time": 1.0,
            "outcome": "ok",
            "complete_time": 1.1,
            "partition": 0,
            "offset": 6,
            "producer": 0,
            "error": None,
        },
        {
            "value": 16,
            "invoke_time": 1.2,
            "outcome": "ok",
            "complete_time": 1.3,
            "partition": 0,
            "offset": 7,
            "producer": 0,
            "error": None,
        },
        {
            "value": 17,
            "invoke_time": 1.2,
            "outcome": "ok",
            "complete_time": 1.4,
            "partition": 0,
            "offset": 7,
            "producer": 2,
            "error": None,
        },
        {
            "value": 18,
            "invoke_time": 1.5,
            "outcome": "ok",
            "complete_time": 1.6,
            "partition": 0,
            "offset": 8,
            "producer": 0,
            "error": None,
        },
        {
            "value": 19,
            "invoke_time": 1.5,
            "outcome": "ok",
            "complete_time": 1.7,
            "partition": 0,
            "offset": 10,
            "producer": 0,
            "error": None,
        },
        {
            "value": 20,
            "invoke_time": 1.5,
            "outcome": "ok",
            "complete_time": 1.8,
            "partition": 0,
            "offset": 9,
            "producer": 0,
            "error": None,
        },
        {
            "value": 21,
            "invoke_time": 4.0,
            "outcome": "ok",
            "complete_time": 4.3,
            "partition": 0,
            "offset": 20,
            "producer": 0,
            "error": None,
        },
        {
            "value": 30,
            "invoke_time": 2.0,
            "outcome": "ok",
            "complete_time": 2.5,
            "partition": 2,
            "offset": 0,
            "producer": 0,
            "error": None,
        },
        {
            "value": 31,
            "invoke_time": 2.0,
            "outcome": "ok",
            "complete_time": 2.5,
            "partition": 2,
            "offset": 1,
            "producer": 0,
            "error": None,
        },
        {
            "value": 32,
            "invoke_time": 2.0,
            "outcome": "ok",
            "complete_time": 2.5,
            "partition": 2,
            "offset": 2,
            "producer": 0,
            "error": None,
        },
        {
            "value": 33,
            "invoke_time": 2.0,
            "outcome": "ok",
            "complete_time": 2.5,
            "partition": 2,
            "offset": 3,
            "producer": 0,
            "error": None,
        },
        {
            "value": 34,
            "invoke_time": 2.0,
            "outcome": "ok",
            "complete_time": 2.5,
            "partition": 2,
            "offset": 4,
            "producer": 0,
            "error": None,
        },
        {
            "value": 35,
            "invoke_time": 2.0,
            "outcome": "ok",
            "complete_time": 2.5,
            "partition": 2,
            "offset": 5,
            "producer": 0,
            "error": None,
        },
    ],
    "reads": [
        {"time": 10.0, "partition": 0, "offset": 0, "value": 10, "consumer": 1},
        {"time": 10.1, "partition": 0, "offset": 1, "value": 11, "consumer": 1},
        {"time": 10.2, "partition": 0, "offset": 2, "value": 13, "consumer": 1},
        {"time": 10.3, "partition": 0, "offset": 3, "value": 12, "consumer": 1},
        {"time": 10.4, "partition": 0, "offset": 4, "value": 15, "consumer": 1},
        {"time": 10.5, "partition": 0, "offset": 5, "value": 777, "consumer": 1},
        {"time": 10.6, "partition": 0, "offset": 6, "value": "ff00", "consumer": 1},
        {"time": 10.7, "partition": 0, "offset": 7, "value": 16, "consumer": 1},
        {"time": 10.8, "partition": 0, "offset": 10, "value": 19, "consumer": 1},
        {"time": 10.9, "partition": 0, "offset": 9, "value": 20, "consumer": 1},
        {"time": 11.0, "partition": 0, "offset": 7, "value": 17, "consumer": 2},
        {"time": 11.1, "partition": 1, "offset": 0, "value": 10, "consumer": 3},
        {"time": 11.2, "partition": 1, "offset": 1, "value": None, "consumer": 3},
        {"time": 12.0, "partition": 2, "offset": 0, "value": 30, "consumer": 0},
        {"time": 12.0, "partition": 2, "offset": 1, "value": 31, "consumer": 0},
        {"time": 12.0, "partition": 2, "offset": 2, "value": 32, "consumer": 0},
        {"time": 12.0, "partition": 2, "offset": 3, "value": 33, "consumer": 0},
        {"time": 12.0, "partition": 2, "offset": 4, "value": 34, "consumer": 0},
        {"time": 12.0, "partition": 2, "offset": 5, "value": 35, "consumer": 0},
    ],
    "drained": [
        {"partition": 1, "start_offset": 0, "end_offset": 2, "time": 20.0, "consumer": None},
        {"partition": 2, "start_offset": 0, "end_offset": 6, "time": 21.0, "consumer": 0},
    ],
    "faults": [
        {"op": "kill", "target": "broker-1", "start": 1.2, "end": 1.5},
        {"op": "pause", "target": "broker-2", "start": 1.6, "end": None},
        {"op": "controller", "target": "zookeeper", "start": 3, "end": 3},
    ],
    "leaders": [
        {"time": 0.5, "partition": 0, "leader": 1, "leader_epoch": 5},
        {"time": 1.5, "partition": 0, "leader": 2, "leader_epoch": 6},
        {"time": 2.5, "partition": 0, "leader": 1, "leader_epoch": 4},
        {"time": 2.6, "partition": 1, "leader": 1, "leader_epoch": 3},
        {"time": 2.7, "partition": 1, "leader": 3, "leader_epoch": 3},
    ],
    "controllers": [
        {"time": 0.1, "controller_id": 1, "controller_epoch": 1},
        {"time": 2.0, "controller_id": -1, "controller_epoch": 1},
        {"time": 2.1, "controller_id": 2, "controller_epoch": 2},
        {"time": 2.2, "controller_id": 1, "controller_epoch": 1},
    ],
    "isr": [
        {"time": 0.5, "partition": 0, "isr": [1, 2, 3]},
        {"time": 1.4, "partition": 0, "isr": [3, 2]},
    ],
    "replica_logs": [
        {"broker_id": 1, "partition": 1, "high_watermark": 2, "records": {"0": 10, "1": None}},
        {
            "broker_id": 2,
            "partition": 1,
            "high_watermark": 2,
            "records": {"0": 10, "1": "zz", "5": 99},
        },
    ],
    "group": "chaos-orders",
    "group_reads": [
        {"time": 13.0, "member": 0, "partition": 2, "offset": 0, "value": 30},
        {"time": 13.1, "member": 0, "partition": 2, "offset": 1, "value": 31},
        {"time": 13.2, "member": 1, "partition": 2, "offset": 3, "value": 33},
        {"time": 13.3, "member": 1, "partition": 2, "offset": 4, "value": 99},
        {"time": 13.4, "member": 1, "partition": 2, "offset": 5, "value": None},
    ],
    "group_commits": [
        {
            "member": 0,
            "invoke_time": 20.0,
            "outcome": "ok",
            "complete_time": 20.01,
            "offsets": {"2": 5},
            "errors": {},
            "error": None,
        },
        {
            "member": 1,
            "invoke_time": 21.0,
            "outcome": "ok",
            "complete_time": 21.1,
            "offsets": {"2": 3},
            "errors": {},
            "error": None,
        },
        {
            "member": 1,
            "invoke_time": 22.0,
            "outcome": "ok",
            "complete_time": 22.5,
            "offsets": {"0": 1, "2": 4},
            "errors": {},
            "error": None,
        },
        {
            "member": 1,
            "invoke_time": 22.1,
            "outcome": "ok",
            "complete_time": 22.2,
            "offsets": {"2": 6},
            "errors": {},
            "error": None,
        },
        {
            "member": 0,
            "invoke_time": 23.0,
            "outcome": "info",
            "complete_time": 24.0,
            "offsets": {"2": 6},
            "errors": {"2": "REQUEST_TIMED_OUT: x"},
            "error": None,
        },
        {
            "member": 0,
            "invoke_time": 24.0,
            "outcome": "fail",
            "complete_time": 24.5,
            "offsets": {},
            "errors": {},
            "error": "ILLEGAL_GENERATION: x",
        },
        {
            "member": 0,
            "invoke_time": 25.0,
            "outcome": "info",
            "complete_time": None,
            "offsets": {"2": 6},
            "errors": {},
            "error": None,
        },
    ],
    "group_assignments": [
        {"time": 5.0, "member": 0, "change": "assign", "changed": [0, 2], "partitions": [0, 1, 2]},
        {"time": 6.0, "member": 0, "change": "revoke", "changed": [0], "partitions": [1, 2]},
        {"time": 7.0, "member": 1, "change": "lost", "changed": [], "partitions": []},
    ],
    "group_offset_reads": [
        {"invoke_time": 19.0, "complete_time": 19.5, "offsets": {}},
        {"invoke_time": 30.0, "complete_time": 30.1, "offsets": {"2": 4}},
    ],
    "moves": [
        {
            "partition": 0,
            "start": 2.0,
            "replicas": [1, 2, 3],
            "target": [3, 1, 2],
            "outcome": "completed",
            "end": 3.5,
            "assignment": [3, 1, 2],
            "error": None,
            "election": "elected",
        },
        {
            "partition": 1,
            "start": 2.0,
            "replicas": [1, 2, 3],
            "target": [1, 2, 4],
            "outcome": "cancelled",
            "end": 4.0,
            "assignment": [2, 1, 3],
            "error": None,
            "election": None,
        },
        {
            "partition": 2,
            "start": 3,
            "replicas": [1, 2, 3],
            "target": [2, 3, 4],
            "outcome": "unanswered",
            "end": 3,
            "assignment": None,
            "error": "NetworkError: x",
            "election": None,
        },
    ],
}

RESULT_JSON: JsonDict = {
    "valid": False,
    "problems": [
        "1 acknowledged values lost: 18",
        "1 acknowledged values read only at another offset than acked: 15@(0, 6)->[(0, 4)]",
        "3 values read that no producer wrote: 777@(0, 5), 'ff00'@(0, 6), None@(1, 1)",
        "1 definitely failed values read: 12",
        "1 offsets acknowledged for two values: (0, 7)=[16, 17]",
        "1 offsets read with two values: (0, 7)=[16, 17]",
        "1 offsets differ across replicas below the HW: (1, 1)={1: None, 2: 'zz'}",
        "1 non-monotonic reads: consumer 1 partition 0: 10 then 9",
        "2 leader epoch violations: regression at 2.500s partition 0: epoch 6 (2) then 4 "
        "(1), conflict at 2.700s partition 1: epoch 3 (1) then 3 (3)",
        "1 controller epoch violations: regression at 2.200s: epoch 2 (2) then 1 (1)",
        "3 records of the final log below the group's commit point never delivered to any "
        "member: 32@(2, 2)<6, 34@(2, 4)<6, 35@(2, 5)<6",
        "1 committed offsets read back that only a commit sent before a later acknowledged "
        "one can have written: partition 2: 4 after 6 (member 1, read at 30.000s)",
        "2 offsets given to group members with two values: (2, 4)=[34, 99], (2, 5)=[None, 35]",
    ],
    "producer": "plain",
    "attempted": 18,
    "acknowledged": 15,
    "failed": 1,
    "in_doubt": 2,
    "recovered": [13],
    "ok": 12,
    "lost": [18],
    "unseen": [21],
    "moved": [{"value": 15, "acked": [0, 6], "read_at": [[0, 4]]}],
    "duplicates": [{"value": 10, "positions": [[0, 0], [1, 0]]}],
    "unexpected": [
        {"partition": 0, "offset": 5, "value": 777, "time": 10.5},
        {"partition": 0, "offset": 6, "value": "ff00", "time": 10.6},
        {"partition": 1, "offset": 1, "value": None, "time": 11.2},
    ],
    "failed_but_read": [12],
    "conflicting_acks": [{"partition": 0, "offset": 7, "values": [16, 17]}],
    "read_divergence": [{"partition": 0, "offset": 7, "values": [16, 17]}],
    "replica_divergence": [{"partition": 1, "offset": 1, "values": {"1": None, "2": "zz"}}],
    "nonmonotonic_reads": [
        {"consumer": 1, "partition": 0, "previous_offset": 10, "offset": 9, "time": 10.9}
    ],
    "skipped_reads": [
        {"consumer": 1, "partition": 0, "previous_offset": 7, "offset": 10, "time": 10.8}
    ],
    "leader_epoch_violations": [
        {
            "kind": "regression",
            "time": 2.5,
            "partition": 0,
            "previous_epoch": 6,
            "previous_holder": 2,
            "epoch": 4,
            "holder": 1,
        },
        {
            "kind": "conflict",
            "time": 2.7,
            "partition": 1,
            "previous_epoch": 3,
            "previous_holder": 1,
            "epoch": 3,
            "holder": 3,
        },
    ],
    "controller_epoch_violations": [
        {
            "kind": "regression",
            "time": 2.2,
            "partition": None,
            "previous_epoch": 2,
            "previous_holder": 2,
            "epoch": 1,
            "holder": 1,
        }
    ],
    "leader_changes": 3,
    "controller_changes": 1,
    "isr_shrinks": 1,
    "isr_expands": 0,
    "unavailability": [
        {
            "op": "kill",
            "target": "broker-1",
            "start": 1.2,
            "end": 1.5,
            "unavailable_s": 5.0,
            "gap_start": 0.0,
            "gap_end": 5.0,
            "partition": 1,
        },
        {
            "op": "pause",
            "target": "broker-2",
            "start": 1.6,
            "end": 5.0,
            "unavailable_s": 5.0,
            "gap_start": 0.0,
            "gap_end": 5.0,
            "partition": 1,
        },
        {
            "op": "controller",
            "target": "zookeeper",
            "start": 3,
            "end": 3,
            "unavailable_s": 5.0,
            "gap_start": 0.0,
            "gap_end": 5.0,
            "partition": 1,
        },
    ],
    "unavailability_by_fault": {
        "controller": {"op": "controller", "windows": 1, "max_s": 5.0, "median_s": 5.0},
        "kill": {"op": "kill", "windows": 1, "max_s": 5.0, "median_s": 5.0},
        "pause": {"op": "pause", "windows": 1, "max_s": 5.0, "median_s": 5.0},
    },
    "group": {
        "group": "chaos-orders",
        "members": 2,
        "final_records": 6,
        "delivered": 3,
        "deliveries": 5,
        "redelivered": 0,
        "losses": [
            {"partition": 2, "offset": 2, "value": 32, "commit_point": 6},
            {"partition": 2, "offset": 4, "value": 34, "commit_point": 6},
            {"partition": 2, "offset": 5, "value": 35, "commit_point": 6},
        ],
        "not_yet_consumed": 0,
        "commit_points": {"0": 1, "2": 6},
        "commits_acknowledged": 4,
        "commits_failed": 1,
        "commits_in_doubt": 2,
        "commit_regressions": [
            {
                "partition": 2,
                "previous_offset": 5,
                "previous_member": 0,
                "previous_time": 20.01,
                "offset": 3,
                "member": 1,
                "time": 21.0,
            },
            {
                "partition": 2,
                "previous_offset": 5,
                "previous_member": 0,
                "previous_time": 20.01,
                "offset": 4,
                "member": 1,
                "time": 22.0,
            },
        ],
        "read_divergence": [
            {"partition": 2, "offset": 4, "values": [34, 99]},
            {"partition": 2, "offset": 5, "values": [None, 35]},
        ],
        "assignments": 1,
        "lost_assignments": 1,
        "offset_reads": 2,
        "commits_out_of_order": [
            {
                "partition": 2,
                "offset": 4,
                "member": 1,
                "time": 22.0,
                "later_offset": 6,
                "later_time": 22.1,
                "later_acknowledged": 22.2,
                "read_time": 30.0,
            }
        ],
    },
    "replicas_unread": [],
    "producer_fatal_errors": [],
}


def as_text(data: Any) -> str:
    # Key order included: the text is what history.json and report.json hold.
    return json.dumps(data, indent=1)


def test_history_json_is_unchanged() -> None:
    data = to_json(every_event_history())
    assert data == HISTORY_JSON
    assert as_text(data) == as_text(HISTORY_JSON)


def test_check_result_json_is_unchanged() -> None:
    data = to_json(check(every_event_history()))
    assert data == RESULT_JSON
    assert as_text(data) == as_text(RESULT_JSON)


def test_report_json_is_unchanged(tmp_path: Path) -> None:
    h = every_event_history()
    paths = write_report(ChaosReport(h, check(h), recovered=True), tmp_path)
    golden = {"result": RESULT_JSON, "history": HISTORY_JSON}
    assert paths["json"].read_text() == as_text(golden) + "\n"


def test_history_round_trips_through_json(tmp_path: Path) -> None:
    h = every_event_history()
    assert from_json(History, json.loads(json.dumps(to_json(h)))) == h
    h.dump(tmp_path / "history.json")
    assert (tmp_path / "history.json").read_text() == as_text(HISTORY_JSON) + "\n"
    assert History.load(tmp_path / "history.json") == h


def test_a_history_from_before_the_group_workload_and_the_drain_consumer_loads() -> None:
    data = json.loads(json.dumps(HISTORY_JSON))
    for key in (
        "group", "group_reads", "group_commits", "group_assignments", "group_offset_reads",
        "moves", "producer",
    ):  # fmt: skip
        del data[key]
    for drained in data["drained"]:
        del drained["consumer"]
    h = from_json(History, data)
    assert h.group is None and h.group_reads == h.group_commits == []
    assert h.producer is ProducerMode.PLAIN
    assert h.group_assignments == h.group_offset_reads == h.moves == []
    assert [d.consumer for d in h.drained] == [None, None]
    assert h.attempts == every_event_history().attempts


def test_loading_coerces_what_json_cannot_say() -> None:
    data = json.loads(json.dumps(HISTORY_JSON))
    data["attempts"][0]["invoke_time"] = 1  # a float field written as an integer
    data["reads"][6]["value"] = "3132"  # the hex of undecodable bytes: a string, not 3132
    data["replica_logs"][1]["records"]["1"] = "00"
    h = from_json(History, data)
    assert h.reads[6].value == "3132" and h.replica_logs[1].records[1] == "00"
    a = h.attempts[0]
    assert type(a.invoke_time) is float and a.invoke_time == 1.0
    assert a.outcome is Outcome.OK and h.group_commits[4].outcome is Outcome.INFO
    assert h.group_assignments[1].change is AssignmentChange.REVOKE
    assert h.isr[0].isr == (1, 2, 3) and h.group_assignments[0].partitions == (0, 1, 2)
    assert h.replica_logs[0].records == {0: 10, 1: None}
    assert h.group_commits[2].offsets == {0: 1, 2: 4}
    assert h.group_commits[4].errors == {2: "REQUEST_TIMED_OUT: x"}
    assert type(h.faults[2].start) is float
    move = h.moves[2]
    assert type(move.start) is float and move.outcome is MoveOutcome.UNANSWERED
    assert h.moves[1].target == (1, 2, 4) and h.moves[1].assignment == (2, 1, 3)


def test_loading_keeps_the_events_checks() -> None:
    data = json.loads(json.dumps(HISTORY_JSON))
    data["attempts"][0]["offset"] = None  # acknowledged without a position
    with pytest.raises(ValueError, match="needs its partition and offset"):
        from_json(History, data)
