#!/usr/bin/env bash
# Inject a fault into one container of the docker-compose cluster (docker-compose.yml).
#
#   scripts/docker-fault.sh OP TARGET
#
#   TARGET   a broker id (1, 2, 3), a service name (broker2), or zookeeper
#   OP       kill      SIGKILL (a crash: no controlled shutdown; the container stays down)
#            stop      SIGTERM: controlled shutdown and a clean close (stays down)
#            start     start a stopped or killed container (no-op if running)
#            restart   SIGTERM then start again; starts it if it was down
#            pause     freeze every process (cgroup freezer: SIGSTOP without a signal)
#            unpause   thaw (no-op if not paused); `resume` is the same
#            status    print the container's state (running, paused, exited, ...)
#
# Meant as a command nemesis (it takes {op} and {broker}). Every OP is idempotent, so a
# heal phase may unpause or start everything. COMPOSE overrides the compose command (default: `docker compose`).
set -euo pipefail

usage() {
    sed -n '2,20s/^# \{0,1\}//p' "$0" >&2
    exit 64
}

[ $# -eq 2 ] || usage
op=$1
target=$2
root=$(cd "$(dirname "$0")/.." && pwd)
read -ra compose <<<"${COMPOSE:-docker compose}"
compose+=(-f "$root/docker-compose.yml")

case $target in
    [0-9]*) service=broker$target ;;
    broker[0-9]* | zookeeper) service=$target ;;
    *) echo "docker-fault: unknown target '$target' (a broker id, brokerN or zookeeper)" >&2; exit 64 ;;
esac

container=$("${compose[@]}" ps --all --quiet "$service" 2>/dev/null | head -n 1 || true)
if [ -z "$container" ]; then
    echo "docker-fault: no container for service $service; is the cluster up (docker compose up -d --wait)?" >&2
    exit 1
fi

state() { docker inspect --format '{{.State.Status}}' "$container"; }

echo "docker-fault: $op $service (container ${container:0:12}, $(state))" >&2
case $op in
    kill)
        # docker refuses to kill a paused container: thaw it first (it runs for the few
        # milliseconds between the two commands).
        if [ "$(state)" = paused ]; then docker unpause "$container" >/dev/null; fi
        if [ "$(state)" = running ]; then docker kill --signal KILL "$container" >/dev/null; fi
        ;;
    stop)
        if [ "$(state)" = paused ]; then docker unpause "$container" >/dev/null; fi
        docker stop "$container" >/dev/null
        ;;
    start)
        if [ "$(state)" = paused ]; then docker unpause "$container" >/dev/null; fi
        if [ "$(state)" != running ]; then docker start "$container" >/dev/null; fi
        ;;
    restart)
        if [ "$(state)" = paused ]; then docker unpause "$container" >/dev/null; fi
        docker restart "$container" >/dev/null
        ;;
    pause)
        if [ "$(state)" = running ]; then docker pause "$container" >/dev/null; fi
        ;;
    unpause | resume)
        if [ "$(state)" = paused ]; then docker unpause "$container" >/dev/null; fi
        ;;
    status) ;;
    *) echo "docker-fault: unknown op '$op'" >&2; usage ;;
esac
state
