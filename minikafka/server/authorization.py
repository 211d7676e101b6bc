"""What a request handler asks before acting: may this connection's principal do this
operation to this resource? (Kafka's KafkaApis.authorize / authorizedOperations.)

Without an authorizer (authorizer.class.name empty) everything is allowed, as in Kafka.
With one, the decision is the AclAuthorizer's (security/authorizer.py), whose ACL cache the
broker keeps current from ZooKeeper (server/acl_store.py). Each decision Kafka would log is
logged to `kafka.authorizer.logger` in Kafka's format: denials at INFO.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable

from minikafka.security.authorizer import (
    AUTHORIZER_LOGGER,
    AclAuthorizer,
    decision_log_level,
    describe_decision,
)
from minikafka.security.operations import (
    AclOperation,
    PatternType,
    ResourceType,
    supported_operations,
    to_32bit_field,
)
from minikafka.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.server.session import ConnectionSession

CLUSTER_NAME = "kafka-cluster"

authorizer_log = logging.getLogger(AUTHORIZER_LOGGER)


class RequestAuthorizer:
    """One per broker; `acls` is None without an authorizer."""

    def __init__(self, acls: AclAuthorizer | None) -> None:
        self.acls = acls

    @property
    def enabled(self) -> bool:
        return self.acls is not None

    def authorize(
        self,
        session: ConnectionSession | None,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        request: str = "",
        log_if_allowed: bool = True,
        log_if_denied: bool = True,
        ref_count: int = 1,
    ) -> bool:
        """Whether the session's principal may do `operation` to the resource. A handler
        that filters (Metadata hiding topics) passes log_if_denied=False, as Kafka does;
        `ref_count` is how many times the request names the resource (for the log line)."""
        if self.acls is None:
            return True
        principal, host = _who(session)
        decision = self.acls.authorize_with_reason(principal, host, operation, resource_type, name)
        level = decision_log_level(decision.allowed, log_if_allowed, log_if_denied)
        if authorizer_log.isEnabledFor(level):
            authorizer_log.log(
                level,
                describe_decision(
                    principal,
                    host,
                    operation,
                    resource_type,
                    name,
                    decision.allowed,
                    request,
                    resource_ref_count=ref_count,
                ),
            )
        return decision.allowed

    def authorize_cluster(
        self, session: ConnectionSession | None, operation: AclOperation, *, request: str = ""
    ) -> bool:
        return self.authorize(
            session, operation, ResourceType.CLUSTER, CLUSTER_NAME, request=request
        )

    def filter_authorized(
        self,
        session: ConnectionSession | None,
        operation: AclOperation,
        resource_type: ResourceType,
        names: Iterable[str],
        *,
        request: str = "",
        log_if_denied: bool = True,
    ) -> set[str]:
        """The names the principal may do `operation` to (each decided once, logged with
        how many times it is named: Kafka's filterByAuthorized)."""
        return {
            n
            for n, count in Counter(names).items()
            if self.authorize(
                session,
                operation,
                resource_type,
                n,
                request=request,
                log_if_denied=log_if_denied,
                ref_count=count,
            )
        }

    def authorize_by_resource_type(
        self,
        session: ConnectionSession | None,
        operation: AclOperation,
        resource_type: ResourceType,
        *,
        request: str = "",
    ) -> bool:
        """Whether the principal may do `operation` to some resource of the type (KIP-679's
        authorizeByResourceType: InitProducerId's WRITE on any topic). Logged as Kafka
        logs it, on resource `Topic:UNKNOWN:NONE`; a super user's is not logged."""
        if self.acls is None:
            return True
        principal, host = _who(session)
        allowed = self.acls.authorize_by_resource_type(principal, host, operation, resource_type)
        if self.acls.is_super_user(principal):
            return allowed
        level = decision_log_level(allowed)
        if authorizer_log.isEnabledFor(level):
            authorizer_log.log(
                level,
                describe_decision(
                    principal,
                    host,
                    operation,
                    resource_type,
                    "NONE",
                    allowed,
                    request,
                    resource_ref_count=0,
                    pattern_type=PatternType.UNKNOWN,
                ),
            )
        return allowed

    def authorized_operations(
        self, session: ConnectionSession | None, resource_type: ResourceType, name: str
    ) -> int:
        """KIP-430's bit field of what the principal may do to the resource."""
        if self.acls is None:
            return to_32bit_field(supported_operations(resource_type))
        principal, host = _who(session)
        return to_32bit_field(self.acls.authorized_operations(principal, host, resource_type, name))

    def rpc_allowed(self, principal: KafkaPrincipal, host: str) -> bool:
        """A broker's request to another (LeaderAndIsr, replica Fetch, ...): Kafka checks
        CLUSTER_ACTION on the cluster."""
        if self.acls is None:
            return True
        allowed = self.acls.authorize(
            principal, host, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
        )
        if not allowed:
            authorizer_log.info(
                describe_decision(
                    principal,
                    host,
                    AclOperation.CLUSTER_ACTION,
                    ResourceType.CLUSTER,
                    CLUSTER_NAME,
                    False,
                    "inter-broker RPC",
                )
            )
        return allowed


def _who(session: ConnectionSession | None) -> tuple[KafkaPrincipal, str]:
    if session is None:
        return ANONYMOUS, ""
    return session.principal, session.host
