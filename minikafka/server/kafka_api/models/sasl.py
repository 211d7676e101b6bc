"""The models of SaslHandshake (17) and SaslAuthenticate (36).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslHandshakeRequest:
    mechanism: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslHandshakeResponse:
    error_code: int
    mechanisms: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslAuthenticateRequest:
    auth_bytes: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslAuthenticateResponse:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime: int = 0  # v1+, ms
