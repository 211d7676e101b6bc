"""Listeners as Kafka configures them: `listeners`, `advertised.listeners`,
`listener.security.protocol.map` and `inter.broker.listener.name`.

A broker serves every listener of `listeners` (`NAME://host:port`, comma-separated) and
registers the advertised ones in ZooKeeper. A client gets, in Metadata, each broker's address
on the listener its request came in on; brokers reach one another on the inter-broker
listener. So one broker can serve an internal address (containers reaching each other by
service name) and an external one (the host reaching a published port) at once.

Pure: parsing and Kafka's validation rules, no sockets.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common import PLAINTEXT, Endpoint

# Kafka's default listener.security.protocol.map: each protocol is a listener name of its own.
KAFKA_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class ListenerConfigError(ValueError):
    pass


def parse_endpoints(value: str, what: str) -> list[Endpoint]:
    """`NAME://host:port,...`: host may be empty (every interface) or a bracketed IPv6
    address; port 0 means any free port."""
    endpoints: list[Endpoint] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, rest = entry.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not name or not colon or not port.isdigit() or int(port) > 65535:
            raise ListenerConfigError(
                f"{what}: {entry!r} is not a listener; expected NAME://host:port "
                "(e.g. PLAINTEXT://:9092 or INTERNAL://broker1:19092)"
            )
        endpoints.append(Endpoint(name.upper(), host.strip("[]"), int(port)))
    if not endpoints:
        raise ListenerConfigError(f"{what} must name at least one listener")
    names = [e.listener for e in endpoints]
    if len(set(names)) != len(names):
        raise ListenerConfigError(f"{what}: each listener must have a different name ({value})")
    return endpoints


def parse_protocol_map(value: str | None) -> dict[str, str]:
    """`NAME:PROTOCOL,...`; unset: Kafka's default (each protocol maps to itself)."""
    if value is None or not value.strip():
        return {p: p for p in KAFKA_SECURITY_PROTOCOLS}
    mapping: dict[str, str] = {}
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ListenerConfigError(
                f"listener.security.protocol.map: {entry!r} is not NAME:PROTOCOL"
            )
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


@dataclass(frozen=True)
class Listeners:
    """What a broker binds, what it advertises, and which listener brokers use among
    themselves."""

    bind: tuple[Endpoint, ...]
    advertised: tuple[Endpoint, ...]
    inter_broker: str
    # listener name -> security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), for each
    # bound listener
    protocols: tuple[tuple[str, str], ...] = ()

    def protocol(self, listener: str) -> str:
        return dict(self.protocols).get(listener, PLAINTEXT)


def resolve_listeners(
    listeners: str,
    advertised_listeners: str | None,
    protocol_map: str | None,
    inter_broker_listener_name: str | None,
    security_inter_broker_protocol: str | None = None,
) -> Listeners:
    """Kafka's rules: every listener has a security protocol in the map, one of Kafka's four;
    ports differ; advertised listeners are a subset of the listeners, default all of them,
    and never the non-routable 0.0.0.0; the inter-broker listener is advertised. It is
    inter.broker.listener.name, or the listener named after security.inter.broker.protocol
    (default PLAINTEXT); not both."""
    bind = parse_endpoints(listeners, "listeners")
    mapping = parse_protocol_map(protocol_map)
    for e in bind:
        protocol = mapping.get(e.listener)
        if protocol is None:
            raise ListenerConfigError(
                f"listeners: no security protocol defined for listener {e.listener} "
                "(add it to listener.security.protocol.map, e.g. "
                f"{e.listener}:PLAINTEXT)"
            )
        if protocol not in KAFKA_SECURITY_PROTOCOLS:
            raise ListenerConfigError(
                f"listener {e.listener} uses security protocol {protocol}, which is not one "
                f"of {', '.join(KAFKA_SECURITY_PROTOCOLS)}"
            )
    ports = [e.port for e in bind if e.port != 0]
    if len(set(ports)) != len(ports):
        raise ListenerConfigError(
            f"listeners: each listener must have a different port ({listeners})"
        )

    if advertised_listeners is None or not advertised_listeners.strip():
        advertised = list(bind)
    else:
        advertised = parse_endpoints(advertised_listeners, "advertised.listeners")
        known = {e.listener for e in bind}
        for e in advertised:
            if e.listener not in known:
                raise ListenerConfigError(
                    f"advertised.listeners: listener {e.listener} is not one of listeners "
                    f"({', '.join(sorted(known))})"
                )
            if e.host == "0.0.0.0":
                raise ListenerConfigError(
                    f"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0 "
                    f"({e.listener}); name an address clients can reach"
                )

    if inter_broker_listener_name and security_inter_broker_protocol:
        raise ListenerConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set."
        )
    if security_inter_broker_protocol is not None:
        inter = security_inter_broker_protocol.strip().upper()
        if inter not in KAFKA_SECURITY_PROTOCOLS:
            raise ListenerConfigError(
                f"security.inter.broker.protocol: {inter} is not one of "
                f"{', '.join(KAFKA_SECURITY_PROTOCOLS)}"
            )
    else:
        inter = (inter_broker_listener_name or PLAINTEXT).strip().upper()
    if inter not in {e.listener for e in advertised}:
        raise ListenerConfigError(
            f"inter.broker.listener.name must be a listener name defined in "
            f"advertised.listeners: {inter} is not"
            + ("" if inter_broker_listener_name else " (set inter.broker.listener.name)")
        )
    protocols = tuple((e.listener, mapping[e.listener]) for e in bind)
    return Listeners(tuple(bind), tuple(advertised), inter, protocols)
