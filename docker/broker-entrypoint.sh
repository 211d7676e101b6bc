#!/bin/bash
# Entrypoint of the minikafka broker image: write server.properties from the environment,
# then exec `minikafka broker` in the foreground (so `docker stop`'s SIGTERM reaches it and
# runs a controlled shutdown).
#
#   BROKER_ID             broker.id              (required)
#   ZOOKEEPER_CONNECT     zookeeper.connect      (required), e.g. zookeeper:2181
#   LISTENERS             listeners              default PLAINTEXT://0.0.0.0:9092
#   ADVERTISED_LISTENERS  advertised.listeners   e.g. INTERNAL://broker1:19092,EXTERNAL://localhost:9092
#   LOG_DIRS              log.dirs               default /var/lib/minikafka/data
#   MINIKAFKA_<NAME>      any broker property: '_' becomes '.', '__' becomes '_', lower
#                         case (MINIKAFKA_MIN_INSYNC_REPLICAS=2 -> min.insync.replicas=2);
#                         written after the five above, so it wins over them. Except the
#                         variables minikafka itself reads from its environment
#                         (MINIKAFKA_ZK_SESSION_FILE; the CLI's MINIKAFKA_BOOTSTRAP_SERVERS,
#                         MINIKAFKA_DATA_DIR and MINIKAFKA_ADMIN_TOKEN),
#                         which stay variables.
#   SERVER_PROPERTIES     where to write the file, default /etc/minikafka/server.properties
#
# docker-compose.yml gives every broker two listeners (INTERNAL://brokerN:19092 between
# containers, EXTERNAL://localhost:<published port> for the host), with
# MINIKAFKA_LISTENER_SECURITY_PROTOCOL_MAP and MINIKAFKA_INTER_BROKER_LISTENER_NAME.
#
# Arguments that start with '-' are added to the broker's command line
# (`--override key=value`); any other command runs as is, without a broker, e.g. a look at
# a segment on the broker's volume (the image has no Kafka client: `topics`, `produce` and
# `consume` run on the host):
# `docker compose run --rm broker1 minikafka dump-log --print-data-log \
#    /var/lib/minikafka/data/orders-0/00000000000000000000.log`.
set -euo pipefail

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    exec "$@"
fi

die() {
    echo "broker-entrypoint: $*" >&2
    exit 64
}

config=${SERVER_PROPERTIES:-/etc/minikafka/server.properties}
[ -n "${BROKER_ID:-}" ] || die "BROKER_ID must be set (the broker's broker.id)"
[ -n "${ZOOKEEPER_CONNECT:-}" ] || die "ZOOKEEPER_CONNECT must be set, e.g. zookeeper:2181"
log_dirs=${LOG_DIRS:-/var/lib/minikafka/data}

# `key=value` on one line; a newline in a value would smuggle in another property.
emit() {
    case $2 in
        *$'\n'*) die "the value for $1 contains a newline" ;;
    esac
    printf '%s=%s\n' "$1" "$2"
}

# MINIKAFKA_LOG_RETENTION_MS -> log.retention.ms; MINIKAFKA_A__B -> a_b.
property_name() {
    local key=${1#MINIKAFKA_}
    key=${key,,}
    key=${key//__/$'\x01'}
    key=${key//_/.}
    printf '%s' "${key//$'\x01'/_}"
}

write_properties() {
    echo "# Written by broker-entrypoint.sh from the container's environment; rewritten at every start."
    emit broker.id "$BROKER_ID"
    emit zookeeper.connect "$ZOOKEEPER_CONNECT"
    emit listeners "${LISTENERS:-PLAINTEXT://0.0.0.0:9092}"
    if [ -n "${ADVERTISED_LISTENERS:-}" ]; then
        emit advertised.listeners "$ADVERTISED_LISTENERS"
    fi
    emit log.dirs "$log_dirs"
    local name
    for name in $(compgen -e | LC_ALL=C sort); do
        case $name in
            MINIKAFKA_ZK_SESSION_FILE | MINIKAFKA_BOOTSTRAP_SERVERS | MINIKAFKA_DATA_DIR | MINIKAFKA_ADMIN_TOKEN) ;;
            MINIKAFKA_?*) emit "$(property_name "$name")" "${!name}" ;;
        esac
    done
}

# The broker creates the log dirs itself.
mkdir -p "$(dirname "$config")"
write_properties >"$config.tmp"
mv "$config.tmp" "$config"

sed 's/^/broker-entrypoint: /' "$config" >&2
exec minikafka broker --config "$config" "$@"
