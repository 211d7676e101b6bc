#!/usr/bin/env bash
# Inject a fault into one container of the docker-compose cluster (docker-compose.yml).
#
#   scripts/docker-fault.sh OP TARGET
#
#   TARGET   a broker id (1, 2, 3; 4 once the grow profile's broker4 was started), a
#            service name (broker2), or zookeeper
#   OP       kill      SIGKILL (a crash: no controlled shutdown; the container stays down)
#            stop      SIGTERM: controlled shutdown and a clean close (stays down)
#            start     start a stopped or killed container (no-op if running)
#            restart   SIGTERM then start again; starts it if it was down
#            pause     freeze every process (cgroup freezer: SIGSTOP without a signal)
#            unpause   thaw (no-op if not paused); `resume` is the same
#            status    print the container's state (running, paused, exited, ...)
#            isolate   cut the container off the network: every packet in or out dropped
#                      (ZooKeeper, the other brokers, clients through the published ports)
#            partition-from-brokers
#                      cut it off from the other brokers only; ZooKeeper and clients on
#                      the host still reach it
#            heal      remove the network cut (no-op if there is none)
#
# Meant as a command nemesis (it takes {op} and {broker}). Every OP is idempotent, so a
# heal phase may unpause or start everything. COMPOSE overrides the compose command
# (default: `docker compose`); COMPOSE_PROJECT_NAME picks another project than minikafka,
# COMPOSE_FILE other compose files (the secured variant's two).
#
# The network cuts are iptables rules in the container's own network namespace, entered
# from the host with nsenter (root; the image needs no iptables): a chain MINIKAFKA-FAULT
# that INPUT and OUTPUT jump to. They go when healed, or with the namespace when the
# container stops.
set -euo pipefail

usage() {
    sed -n '2,30s/^# \{0,1\}//p' "$0" >&2
    exit 64
}

[ $# -eq 2 ] || usage
op=$1
target=$2
root=$(cd "$(dirname "$0")/.." && pwd)
read -ra compose <<<"${COMPOSE:-docker compose}"
# COMPOSE_FILE (compose's own variable) names the files of a variant, e.g.
# docker-compose.yml:docker-compose.secure.yml; without it, the repository's compose file.
if [ -z "${COMPOSE_FILE:-}" ]; then
    compose+=(-f "$root/docker-compose.yml")
fi

case $target in
    [0-9]*) service=broker$target ;;
    broker[0-9]* | zookeeper) service=$target ;;
    *) echo "docker-fault: unknown target '$target' (a broker id, brokerN or zookeeper)" >&2; exit 64 ;;
esac

container=$("${compose[@]}" ps --all --quiet "$service" 2>/dev/null | head -n 1 || true)
if [ -z "$container" ]; then
    # broker4 is in the grow profile: a plain `up` does not create it.
    start="docker compose up -d --wait"
    if [ "$service" = broker4 ]; then start="docker compose --profile grow up -d --wait broker4"; fi
    echo "docker-fault: no container for service $service; is it up ($start)?" >&2
    exit 1
fi

state() { docker inspect --format '{{.State.Status}}' "$container"; }

# iptables inside the container's network namespace.
in_netns() {
    local pid
    pid=$(docker inspect --format '{{.State.Pid}}' "$container")
    if [ "$pid" = 0 ]; then
        echo "docker-fault: $service is not running; no network to cut" >&2
        exit 1
    fi
    nsenter --target "$pid" --net -- "$@"
}

fault_chain() {
    in_netns iptables -w -N MINIKAFKA-FAULT 2>/dev/null || in_netns iptables -w -F MINIKAFKA-FAULT
    local hook
    for hook in INPUT OUTPUT; do
        in_netns iptables -w -C "$hook" -j MINIKAFKA-FAULT 2>/dev/null ||
            in_netns iptables -w -I "$hook" -j MINIKAFKA-FAULT
    done
    # The container's own loopback (its healthcheck) stays.
    in_netns iptables -w -A MINIKAFKA-FAULT -i lo -j RETURN
    in_netns iptables -w -A MINIKAFKA-FAULT -o lo -j RETURN
}

# Address of a service's container on this container's compose network(s).
address_of() {
    local other
    other=$("${compose[@]}" ps --quiet "$1" 2>/dev/null | head -n 1 || true)
    [ -n "$other" ] || return 0
    docker inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$other"
}

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
    isolate)
        fault_chain
        in_netns iptables -w -A MINIKAFKA-FAULT -j DROP
        ;;
    partition-from-brokers)
        # Everything on the compose network but ZooKeeper and the gateway (the host: its
        # published ports reach the container from there) is dropped, so a broker that
        # restarts elsewhere in the subnet stays cut off too.
        fault_chain
        for ip in $(address_of zookeeper) $(docker inspect --format '{{range .NetworkSettings.Networks}}{{.Gateway}} {{end}}' "$container"); do
            in_netns iptables -w -A MINIKAFKA-FAULT -s "$ip" -j RETURN
            in_netns iptables -w -A MINIKAFKA-FAULT -d "$ip" -j RETURN
        done
        for net in $(docker inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}/{{.IPPrefixLen}} {{end}}' "$container"); do
            in_netns iptables -w -A MINIKAFKA-FAULT -s "$net" -j DROP
            in_netns iptables -w -A MINIKAFKA-FAULT -d "$net" -j DROP
        done
        ;;
    heal)
        if [ "$(state)" = running ] || [ "$(state)" = paused ]; then
            in_netns iptables -w -F MINIKAFKA-FAULT 2>/dev/null || true
        fi
        ;;
    status) ;;
    *) echo "docker-fault: unknown op '$op'" >&2; usage ;;
esac
state
