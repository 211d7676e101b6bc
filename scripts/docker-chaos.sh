#!/usr/bin/env bash
# Run `minikafka chaos` against the docker-compose cluster, with containers as the nemesis.
#
# It uses the command mode of `minikafka chaos`: the brokers are reached through
# --bootstrap-server, leaders, ISRs and the controller are read from --zookeeper, faults
# are injected by running --nemesis-command with {op} and {broker} substituted, and each
# replica is read back with a fetch from its broker (the containers' files stay inside).
#
#   scripts/docker-chaos.sh [more minikafka chaos options...]
#
#   NEMESIS      faults to inject (default kill,pause; also restart, controller): what
#                scripts/docker-fault.sh can do; network partitions and ZooKeeper session
#                expiry need the local cluster (`minikafka cluster up`), not containers
#   TIME_LIMIT   seconds of workload (default 60)
#   BOOTSTRAP    default broker1:9092,broker2:9093,broker3:9094
#   ZOOKEEPER    default localhost:2181 (published by docker-compose.yml)
#   NO_UP=1      do not run `docker compose up -d --wait` first
#   COMPOSE      the compose command (default: docker compose)
#
# minikafka chaos runs on the host and reaches the brokers by the names they advertise, so
# the host needs `127.0.0.1 broker1 broker2 broker3` in /etc/hosts (see docker-compose.yml).
# Each fault is `scripts/docker-fault.sh {op} {broker}`, run by chaos with its op and a
# broker id substituted. Extra arguments go to `minikafka chaos` as they are, e.g.
#   scripts/docker-chaos.sh --seed 7 --interval 10
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
read -ra compose <<<"${COMPOSE:-docker compose}"
compose+=(-f "$root/docker-compose.yml")

for name in broker1 broker2 broker3; do
    if ! getent hosts "$name" >/dev/null; then
        echo "docker-chaos: $name does not resolve on this host; add the brokers' names once:" >&2
        echo "  echo '127.0.0.1 broker1 broker2 broker3' | sudo tee -a /etc/hosts" >&2
        exit 2
    fi
done

if [ "${NO_UP:-0}" != 1 ]; then
    "${compose[@]}" up -d --wait
fi

# The repository's venv first, if there is one; else the minikafka on PATH.
if [ -x "$root/.venv/bin/minikafka" ]; then
    PATH="$root/.venv/bin:$PATH"
fi

fault=$(printf '%q' "$root/scripts/docker-fault.sh")
exec minikafka chaos \
    --bootstrap-server "${BOOTSTRAP:-broker1:9092,broker2:9093,broker3:9094}" \
    --zookeeper "${ZOOKEEPER:-localhost:2181}" \
    --nemesis "${NEMESIS:-kill,pause}" \
    --time-limit "${TIME_LIMIT:-60}" \
    --nemesis-command "$fault {op} {broker}" \
    "$@"
