"""Who a connection is: Kafka's KafkaPrincipal (`User:alice`).

A connection on a PLAINTEXT listener, or on an SSL listener whose client sent no
certificate, is `User:ANONYMOUS`; SASL makes the principal the authenticated user; an SSL
client certificate makes it the mapped subject (ssl.principal.mapping.rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

USER_TYPE: Final = "User"


@dataclass(frozen=True, order=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`Type:name` as Kafka's SecurityUtils.parseKafkaPrincipal reads it (the name may
        itself hold colons). ValueError for text without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"{text!r} is not a principal: expected Type:name, e.g. User:alice")
        return cls(principal_type, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)


ANONYMOUS: Final = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
# The wildcard principal of an ACL: matches every principal, whatever its type.
WILDCARD_USER: Final = KafkaPrincipal(USER_TYPE, "*")
