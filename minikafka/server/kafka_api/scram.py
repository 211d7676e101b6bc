"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): SCRAM users,
kept in ZooKeeper as Kafka keeps them (server/scram_credentials.py)."""

from __future__ import annotations

from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import AclOperation
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.scram import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api
from minikafka.server.scram_credentials import Deletion, Upsertion

DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51


class ScramApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", versions=(0, 0))
    async def describe_user_scram_credentials(
        self, req: DescribeUserScramCredentialsRequest, ctx: RequestContext
    ) -> DescribeUserScramCredentialsResponse:
        # DESCRIBE on the cluster, else the request's error alone (Kafka's).
        if not self.apis.authorizer.authorize_cluster(
            ctx.session, AclOperation.DESCRIBE, request="DescribeUserScramCredentials"
        ):
            return DescribeUserScramCredentialsResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, results=()
            )
        users = None if req.users is None else [u.name for u in req.users]
        results = await self.apis.scram_admin.describe(users)
        return DescribeUserScramCredentialsResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            results=tuple(
                DescribeUserScramCredentialsResult(
                    user=r.user,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    credential_infos=tuple(
                        CredentialInfo(mechanism=i.mechanism, iterations=i.iterations)
                        for i in r.credential_infos
                    ),
                )
                for r in results
            ),
        )

    @api(ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", versions=(0, 0))
    async def alter_user_scram_credentials(
        self, req: AlterUserScramCredentialsRequest, ctx: RequestContext
    ) -> AlterUserScramCredentialsResponse:
        # ALTER on the cluster, else each user named (once, sorted) gets the error: Kafka's
        # getErrorResponse.
        if not self.apis.authorizer.authorize_cluster(
            ctx.session, AclOperation.ALTER, request="AlterUserScramCredentials"
        ):
            users = sorted({d.name for d in req.deletions} | {u.name for u in req.upsertions})
            return AlterUserScramCredentialsResponse(
                results=tuple(
                    AlterUserScramCredentialsResult(
                        user=u,
                        error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        error_message=None,
                    )
                    for u in users
                )
            )
        results = await self.apis.scram_admin.alter(
            [Deletion(d.name, d.mechanism) for d in req.deletions],
            [
                Upsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
                for u in req.upsertions
            ],
        )
        return AlterUserScramCredentialsResponse(
            results=tuple(
                AlterUserScramCredentialsResult(
                    user=r.user, error_code=r.error_code, error_message=r.error_message
                )
                for r in results
            )
        )
