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
#   NEMESIS      faults to inject (default kill,pause; also restart, controller, and the
#                network partitions partition, partition-from-brokers, partition-2013):
#                what scripts/docker-fault.sh can do (ZooKeeper session expiry needs the
#                local cluster, `minikafka cluster up`); and reassign (partition moves,
#                through the brokers: no command)
#   TIME_LIMIT   seconds of workload (default 60)
#   BOOTSTRAP    default: the brokers' published EXTERNAL ports, localhost:9092,9093,9094
#                (moved with MINIKAFKA_BROKER{1,2,3}_PORT, as in docker-compose.yml); a
#                broker4 started with the grow profile is found from there (chaos faults
#                the brokers registered in ZooKeeper, and docker-fault.sh takes 4)
#   ZOOKEEPER    default localhost:2181 (MINIKAFKA_ZOOKEEPER_PORT moves it)
#   NO_UP=1      do not run `docker compose up -d --wait` first
#   COMPOSE      the compose command (default: docker compose); COMPOSE_PROJECT_NAME picks
#                another project than minikafka
#
# minikafka chaos runs on the host and reaches the brokers through their published ports
# (the EXTERNAL listener). Each fault is `scripts/docker-fault.sh {op} {broker}`, run by
# chaos with its op and a broker id substituted (network cuts need root: nsenter and
# iptables). Extra arguments go to `minikafka chaos` as they are, e.g.
#   scripts/docker-chaos.sh --seed 7 --interval 10
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
read -ra compose <<<"${COMPOSE:-docker compose}"
compose+=(-f "$root/docker-compose.yml")

if [ "${NO_UP:-0}" != 1 ]; then
    "${compose[@]}" up -d --wait
fi

# The repository's venv first, if there is one; else the minikafka on PATH.
if [ -x "$root/.venv/bin/minikafka" ]; then
    PATH="$root/.venv/bin:$PATH"
fi

fault=$(printf '%q' "$root/scripts/docker-fault.sh")
exec minikafka chaos \
    --bootstrap-server "${BOOTSTRAP:-localhost:${MINIKAFKA_BROKER1_PORT:-9092},localhost:${MINIKAFKA_BROKER2_PORT:-9093},localhost:${MINIKAFKA_BROKER3_PORT:-9094}}" \
    --zookeeper "${ZOOKEEPER:-localhost:${MINIKAFKA_ZOOKEEPER_PORT:-2181}}" \
    --nemesis "${NEMESIS:-kill,pause}" \
    --time-limit "${TIME_LIMIT:-60}" \
    --nemesis-command "$fault {op} {broker}" \
    "$@"
