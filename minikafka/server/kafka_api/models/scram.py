"""The models of DescribeUserScramCredentials (50) and AlterUserScramCredentials (51).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class UserName:
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeUserScramCredentialsRequest:
    users: tuple[UserName, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialInfo:
    mechanism: int
    iterations: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: int
    error_message: str | None
    credential_infos: tuple[CredentialInfo, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeUserScramCredentialsResponse:
    throttle_time: int = 0
    error_code: int
    error_message: str | None
    results: tuple[DescribeUserScramCredentialsResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterUserScramCredentialsRequest:
    deletions: tuple[ScramCredentialDeletion, ...]
    upsertions: tuple[ScramCredentialUpsertion, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterUserScramCredentialsResponse:
    throttle_time: int = 0
    results: tuple[AlterUserScramCredentialsResult, ...]
