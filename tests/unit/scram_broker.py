"""A one-node stand-in Kafka broker on loopback serving what `minikafka configs` asks for
(ApiVersions, Metadata, DescribeUserScramCredentials, AlterUserScramCredentials) with the
answers of Kafka 2.8's ZkAdminManager, its users' credentials in memory. It lets the
command be tested with librdkafka, over Kafka's protocol, before minikafka's brokers serve
KIP-554 (tests/cluster/test_configs_users.py runs it against those)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kio.schema.alter_user_scram_credentials.v0 import response as alter_response
from kio.schema.describe_user_scram_credentials.v0 import response as describe_response
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v4 import response as metadata_response
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from minikafka.protocol.kafka.codec import KafkaRequest
from minikafka.security.scram import MAX_ITERATIONS, MIN_ITERATIONS
from tests.unit.stand_in_broker import NO_TIME, StandInBroker

SERVED = {18: (0, 3), 3: (4, 4), 50: (0, 0), 51: (0, 0)}


@dataclass(frozen=True)
class Credential:
    iterations: int
    salt: bytes
    salted_password: bytes


class ScramBroker(StandInBroker):
    def __init__(self, served: dict[int, tuple[int, int]] = SERVED) -> None:
        self.users: dict[str, dict[int, Credential]] = {}
        self.requests: list[Any] = []  # the KIP-554 requests, as received
        super().__init__(served)

    def answer(self, request: KafkaRequest) -> Any:
        if request.api_key == 3:
            return metadata_response.MetadataResponse(
                throttle_time=NO_TIME,
                brokers=(
                    metadata_response.MetadataResponseBroker(
                        node_id=BrokerId(1), host="127.0.0.1", port=i32(self.port)
                    ),
                ),
                cluster_id="scram-broker",
                controller_id=BrokerId(1),
                topics=(),
            )
        self.requests.append(request.body)
        if request.api_key == 50:
            return self._describe(request.body)
        return self._alter(request.body)

    def _describe(self, body: Any) -> Any:
        """ZkAdminManager.describeUserScramCredentials: every user with credentials, sorted,
        or the users named, each once (DUPLICATE_RESOURCE for one named twice,
        RESOURCE_NOT_FOUND for one without credentials)."""
        results = []
        if not body.users:
            names = sorted(self.users)
        else:
            names = list(dict.fromkeys(u.name for u in body.users))
        asked = [u.name for u in body.users or ()]
        for name in names:
            code, message = ErrorCode.none, None
            infos: tuple[Any, ...] = ()
            if asked.count(name) > 1:
                code = ErrorCode.duplicate_resource
                message = (
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {name}"
                )
            elif name not in self.users:
                code = ErrorCode.resource_not_found
                message = f"Attempt to describe a user credential that does not exist: {name}"
            else:
                infos = tuple(
                    describe_response.CredentialInfo(mechanism=i8(m), iterations=i32(c.iterations))
                    for m, c in sorted(self.users[name].items())
                )
            results.append(
                describe_response.DescribeUserScramCredentialsResult(
                    user=name, error_code=code, error_message=message, credential_infos=infos
                )
            )
        return describe_response.DescribeUserScramCredentialsResponse(
            throttle_time=NO_TIME,
            error_code=ErrorCode.none,
            error_message=None,
            results=tuple(results),
        )

    def _alter(self, body: Any) -> Any:
        """ZkAdminManager.alterUserScramCredentials, for one user per request."""
        users = {a.name for a in (*body.deletions, *body.upsertions)}
        results = []
        for user in sorted(users):
            code, message = self._check(user, body)
            if code == ErrorCode.none:
                creds = self.users.setdefault(user, {})
                for d in body.deletions:
                    creds.pop(int(d.mechanism))
                for u in body.upsertions:
                    creds[int(u.mechanism)] = Credential(
                        int(u.iterations), bytes(u.salt), bytes(u.salted_password)
                    )
                if not creds:
                    del self.users[user]
            results.append(
                alter_response.AlterUserScramCredentialsResult(
                    user=user, error_code=code, error_message=message
                )
            )
        return alter_response.AlterUserScramCredentialsResponse(
            throttle_time=NO_TIME, results=tuple(results)
        )

    def _check(self, user: str, body: Any) -> tuple[ErrorCode, str | None]:
        mechanisms = [int(a.mechanism) for a in (*body.deletions, *body.upsertions)]
        if len(mechanisms) != len(set(mechanisms)):
            return (
                ErrorCode.duplicate_resource,
                "A user credential cannot be altered twice in the same request",
            )
        for d in body.deletions:
            if int(d.mechanism) not in self.users.get(user, {}):
                return (
                    ErrorCode.resource_not_found,
                    "Attempt to delete a user credential that does not exist",
                )
        for u in body.upsertions:
            if u.iterations < MIN_ITERATIONS:
                return ErrorCode.unacceptable_credential, "Too few iterations"
            if u.iterations > MAX_ITERATIONS:
                return ErrorCode.unacceptable_credential, "Too many iterations"
        return ErrorCode.none, None


@contextmanager
def scram_broker(served: dict[int, tuple[int, int]] = SERVED) -> Iterator[ScramBroker]:
    """A ScramBroker serving `served` (api key -> versions), closed on exit."""
    broker = ScramBroker(served)
    try:
        yield broker
    finally:
        broker.close()
