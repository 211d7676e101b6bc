"""The models of InitProducerId (22).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdRequest:
    transactional_id: str | None
    transaction_timeout: int
    producer_id: int = -1  # v3+
    producer_epoch: int = -1  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdResponse:
    throttle_time: int = 0
    error_code: int
    producer_id: int = -1
    producer_epoch: int
