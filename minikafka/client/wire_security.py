"""The security settings of the tools' own Kafka connections (kafka_wire.py) from the same
librdkafka properties their librdkafka clients get (client_security.py): a TLS context as
OpenSSL's librdkafka builds one, and SASL credentials. So a command that reads replicas
with its own Fetch requests connects the way its producers and consumers do."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from minikafka.client.client_security import ClientSecurityError

# librdkafka properties these connections take; any other `ssl.`/`sasl.` one is refused,
# not ignored (librdkafka's clients of the same command take it).
_TAKEN: Final = frozenset(
    {
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.cipher.suites",
        "ssl.endpoint.identification.algorithm",
        "sasl.mechanism",
        "sasl.username",
        "sasl.password",
    }
)


@dataclass(frozen=True)
class SaslCredentials:
    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:  # never the password
        return f"SaslCredentials({self.mechanism}, {self.username})"


@dataclass(frozen=True)
class WireSecurity:
    """TLS (a client context, which says whether the broker's name is checked) and SASL."""

    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None


PLAINTEXT_WIRE: Final = WireSecurity()


def wire_security(props: Mapping[str, str]) -> WireSecurity:
    """librdkafka's security properties as a WireSecurity; ClientSecurityError naming a
    property these connections cannot honour, or a file they cannot read."""
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    unknown = sorted(k for k in props if k.startswith(("ssl.", "sasl.")) and k not in _TAKEN)
    if unknown:
        raise ClientSecurityError(
            f"{unknown[0]}: minikafka's own Kafka connections (the replica reads of chaos and "
            "`replicas`) do not take it"
        )
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = _tls_context(props)
    sasl = None
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        try:
            sasl = SaslCredentials(
                props["sasl.mechanism"], props["sasl.username"], props["sasl.password"]
            )
        except KeyError as e:
            raise ClientSecurityError(f"security.protocol {protocol} needs {e.args[0]}") from None
    return WireSecurity(context, sasl)


def _tls_context(props: Mapping[str, str]) -> ssl.SSLContext:
    # librdkafka trusts the system's CAs when no CA is given, and checks the broker's name
    # (ssl.endpoint.identification.algorithm=https) unless told `none`.
    try:
        context = ssl.create_default_context(
            cafile=props.get("ssl.ca.location"), cadata=props.get("ssl.ca.pem")
        )
        certificate = props.get("ssl.certificate.location")
        if certificate is not None:
            context.load_cert_chain(
                certificate,
                props.get("ssl.key.location", certificate),
                props.get("ssl.key.password"),
            )
        elif "ssl.key.location" in props:
            raise ClientSecurityError("ssl.key.location without ssl.certificate.location")
        if "ssl.cipher.suites" in props:
            context.set_ciphers(props["ssl.cipher.suites"])
    except (OSError, ssl.SSLError) as e:
        raise ClientSecurityError(f"TLS settings: {e}") from None
    context.check_hostname = props.get("ssl.endpoint.identification.algorithm", "https") != "none"
    return context
