"""A network identity per broker for `LocalCluster(network="netns")`, and network faults.

Topology (created and removed by LocalCluster, as root; every name derives from a 6-hex-digit
cluster id `<cid>`, a hash of the data dir, so two clusters coexist and a later start finds
the leftovers of a crashed one):

    root namespace              ZooKeeper, clients, tests, the `minikafka` CLI
      bridge mk<cid>br          the gateway: first address of the cluster's subnet, where
                                ZooKeeper listens and from which clients connect
      veth   mk<cid>v<N>        broker N's link, a port of the bridge
    namespace mk-<cid>-b<N>     broker N's process, alone
      veth   mk<cid>p<N>        the other end: address subnet+10+N (broker 1: .11); lo

Everything is one layer-2 segment: no routes, no forwarding, nothing leaves the machine.
The subnet is a /24 of 198.18.0.0/15 (RFC 2544's benchmarking range, unused on real networks),
chosen from the cluster id and skipped when an address or route of the root namespace
overlaps it; `subnet=` sets one.

Faults act only on broker N's root-side veth, so they are one broker's own state, survive
the broker's restarts (the namespace and link live as long as the cluster) and are undone
by removing them from that link:

- cut `brokers` (partition from the other brokers): a tc filter drops every IPv4 packet
  between the broker and any address of the subnet except the gateway, both ways (clsact
  ingress: from the broker; egress: to it). ZooKeeper and clients reach brokers from the
  gateway address, so the broker keeps its ZooKeeper session and its clients.
- cut `all` (isolate): the filter drops every frame except ARP.

  Dropped, not rejected, as Jepsen's and Kafka's own partition tests do with iptables DROP:
  established connections stall and new ones hang until their timeouts; nobody gets an
  error at once. ARP passes so that a heal is not followed by neighbour-resolution failures.
  The filters are classic BPF programs that cls_bpf runs in direct-action mode (returning
  TC_ACT_SHOT): iproute2 only, no iptables or nftables, and no need for act_gact or
  cls_flower, which some kernels lack. (The one iptables rule: where bridged frames go
  through iptables' FORWARD chain, as on a machine with a Docker Engine, a rule accepting
  the bridge's own traffic, added and removed with the bridge.) Blackhole or unreachable routes would be simpler but
  make every new connect() fail at once (EINVAL, EHOSTUNREACH): a reject, not a partition.
- degrade: netem (delay, jitter, loss) as the root qdisc of both ends of the veth, so each
  packet to or from the broker is delayed (and may be dropped) once. Needs sch_netem.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from minikafka.cluster.errors import ClusterError

Cut = Literal["brokers", "all"]
CUTS: tuple[Cut, ...] = ("brokers", "all")

# RFC 2544's benchmarking range: reserved, never routed, rarely configured on a machine.
DEFAULT_POOL = ipaddress.IPv4Network("198.18.0.0/15")
SUBNET_PREFIX = 24
FIRST_BROKER_OFFSET = 10  # broker N is subnet + 10 + N

_SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"
_INSTALL_HINT = "apt-get install -y iproute2"

# Classic BPF (linux/filter.h) as `tc ... bpf bytecode` takes it: "n,code jt jf k,...".
_LDH_ABS = 0x28  # A = ntohs(frame[k:k+2])
_LDW_ABS = 0x20  # A = ntohl(frame[k:k+4])
_JEQ_K = 0x15  # pc += (A == k) ? jt : jf
_AND_K = 0x54  # A &= k
_RET_K = 0x06  # return k
_ETH_P_IP = 0x0800
_ETH_P_ARP = 0x0806
_TC_ACT_SHOT = 2
_TC_ACT_UNSPEC = 0xFFFFFFFF  # -1: no verdict, the packet goes on
# Offsets in the Ethernet frame (cls_bpf sees it from the MAC header, both directions).
_ETHERTYPE = 12
_IPV4_SRC = 14 + 12
_IPV4_DST = 14 + 16


def cluster_id_for(data_dir: Path) -> str:
    """Six hex digits of the data dir's hash: the per-cluster part of every name."""
    return hashlib.sha1(str(data_dir).encode()).hexdigest()[:6]


def bridge_name(cluster_id: str) -> str:
    return f"mk{cluster_id}br"


def _candidates(pool: ipaddress.IPv4Network, cluster_id: str) -> list[ipaddress.IPv4Network]:
    """The pool's /24s, starting at the one the cluster id hashes to (stable across runs of
    one data dir, different for different ones)."""
    subnets = list(pool.subnets(new_prefix=SUBNET_PREFIX))
    start = int(cluster_id, 16) % len(subnets)
    return subnets[start:] + subnets[:start]


def preferred_subnet(cluster_id: str) -> ipaddress.IPv4Network:
    return _candidates(DEFAULT_POOL, cluster_id)[0]


def parse_subnet(text: str) -> ipaddress.IPv4Network:
    """A user's `--subnet` (e.g. `10.77.3.0/24`); ValueError with the reason otherwise."""
    try:
        net = ipaddress.IPv4Network(text.strip())
    except ValueError as e:
        raise ValueError(f"invalid subnet {text!r}: {e}") from None
    if net.is_loopback or net.is_multicast or net.is_link_local or net.is_unspecified:
        raise ValueError(f"subnet {net} cannot be used for a cluster's bridge")
    if net.prefixlen > 27:
        raise ValueError(f"subnet {net} is too small: use a /27 or larger (a /24 by default)")
    return net


@dataclass(frozen=True)
class NetnsLayout:
    """The names and addresses of one cluster's network; pure, no side effects."""

    cluster_id: str
    subnet: ipaddress.IPv4Network

    @property
    def gateway(self) -> ipaddress.IPv4Address:
        """The bridge's address in the root namespace: ZooKeeper's, and clients' source."""
        return self.subnet.network_address + 1

    @property
    def bridge(self) -> str:
        return bridge_name(self.cluster_id)

    def netns(self, broker_id: int) -> str:
        return f"mk-{self.cluster_id}-b{broker_id}"

    def veth(self, broker_id: int) -> str:
        """The root-namespace end of broker N's link (≤ 15 characters up to broker 999999)."""
        return f"mk{self.cluster_id}v{broker_id}"

    def peer(self, broker_id: int) -> str:
        """The end inside broker N's namespace."""
        return f"mk{self.cluster_id}p{broker_id}"

    def address(self, broker_id: int) -> ipaddress.IPv4Address:
        addr = self.subnet.network_address + FIRST_BROKER_OFFSET + broker_id
        if addr not in self.subnet or addr == self.subnet.broadcast_address:
            raise ClusterError(
                f"broker {broker_id} has no address in the cluster's subnet {self.subnet}"
            )
        return addr

    def is_our_link(self, name: str) -> bool:
        return re.fullmatch(rf"mk{self.cluster_id}(br|v\d+)", name) is not None

    def broker_of_netns(self, name: str) -> int | None:
        m = re.fullmatch(rf"mk-{self.cluster_id}-b(\d+)", name)
        return int(m.group(1)) if m else None


# --- running ip and tc ---------------------------------------------------------------------


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=_SBIN)
    if path is None:
        raise ClusterError(
            f"network='netns' needs `{name}` from iproute2, which is not installed "
            f"(`{_INSTALL_HINT}`)"
        )
    return path


def require_privileges() -> None:
    """Root, `ip` and `tc`, or a ClusterError that says what is missing."""
    if os.geteuid() != 0:
        raise ClusterError(
            "network='netns' needs root: it creates network namespaces, veth links, a "
            "bridge and tc filters. Run as root, or use the default network='loopback' "
            "(no network faults then)."
        )
    _tool("ip")
    _tool("tc")


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=30)
    if check and done.returncode != 0:
        raise ClusterError(
            f"`{' '.join(argv)}` failed (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()}"
        )
    return done


def ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    prefix = [_tool("ip")] + (["-n", netns] if netns else [])
    return _run([*prefix, *args], check=check).stdout


def _ip_json(*args: str) -> list[dict[str, Any]]:
    out = ip("-j", *args).strip()
    if not out:
        return []
    data: list[dict[str, Any]] = json.loads(out)
    return data


def tc(
    *args: str, netns: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    prefix = [_tool("tc")] + (["-n", netns] if netns else [])
    return _run([*prefix, *args], check=check)


def exec_prefix(layout: NetnsLayout, broker_id: int) -> list[str]:
    """`ip netns exec <ns>`: it enters the namespace and execs the command in place, so the
    pid of the process started with this prefix is the command's own pid."""
    return [_tool("ip"), "netns", "exec", layout.netns(broker_id)]


# --- the subnet ----------------------------------------------------------------------------


def subnet_conflicts(subnet: ipaddress.IPv4Network, own_links: Sequence[str] = ()) -> list[str]:
    """Addresses and routes of the root namespace that overlap `subnet`, except on our links."""
    found: list[str] = []
    for link in _ip_json("-4", "addr", "show"):
        if link.get("ifname") in own_links:
            continue
        for a in link.get("addr_info", []):
            net = ipaddress.IPv4Interface(f"{a['local']}/{a['prefixlen']}").network
            if net.overlaps(subnet):
                found.append(f"address {a['local']}/{a['prefixlen']} on {link.get('ifname')}")
    for route in _ip_json("-4", "route", "show"):
        dst, dev = route.get("dst", "default"), route.get("dev")
        if dst == "default" or dev in own_links:
            continue
        if ipaddress.IPv4Network(dst, strict=False).overlaps(subnet):
            found.append(f"route {dst}" + (f" dev {dev}" if dev else ""))
    return sorted(set(found))


def pick_subnet(
    cluster_id: str, pool: ipaddress.IPv4Network = DEFAULT_POOL, own_links: Sequence[str] = ()
) -> ipaddress.IPv4Network:
    """The first /24 of `pool`, in the cluster id's order, that nothing else uses."""
    for net in _candidates(pool, cluster_id):
        if not subnet_conflicts(net, own_links):
            return net
    raise ClusterError(f"no free /{SUBNET_PREFIX} left in {pool}; pass a subnet explicitly")


# --- setting up and tearing down -----------------------------------------------------------


def netns_names() -> list[str]:
    return [str(n["name"]) for n in _ip_json("netns", "list")]


def link_names() -> list[str]:
    return [str(link["ifname"]) for link in _ip_json("link", "show")]


def setup_bridge(layout: NetnsLayout) -> None:
    """The bridge with the gateway address, up (STP off, no forward delay)."""
    ip("link", "add", layout.bridge, "type", "bridge", "forward_delay", "0")
    ip("addr", "add", f"{layout.gateway}/{layout.subnet.prefixlen}", "dev", layout.bridge)
    ip("link", "set", layout.bridge, "up")
    _accept_bridged_traffic(layout.bridge, accept=True)


_BRIDGE_NF_CALL_IPTABLES = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")


def _bridged_traffic_filtered() -> bool:
    """Whether frames between a bridge's ports go through iptables' FORWARD chain: with
    br_netfilter loaded and bridge-nf-call-iptables=1, as a Docker Engine sets it up (with
    FORWARD's policy DROP). Then brokers on our bridge cannot reach one another unless a
    rule accepts their traffic, as Docker's does for docker0."""
    try:
        return _BRIDGE_NF_CALL_IPTABLES.read_text().strip() == "1"
    except OSError:
        return False


def _accept_bridged_traffic(bridge: str, *, accept: bool) -> None:
    """Add (or remove) `FORWARD -i BRIDGE -o BRIDGE -j ACCEPT` when bridged traffic is
    filtered: it only lets our brokers' frames through the bridge, where the faults (tc
    filters on each link) decide what is dropped."""
    iptables = shutil.which("iptables") or shutil.which("iptables", path=_SBIN)
    if iptables is None or not _bridged_traffic_filtered():
        return
    rule = ["FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]
    present = _run([iptables, "-w", "-C", *rule], check=False).returncode == 0
    if accept and not present:
        _run([iptables, "-w", "-I", *rule])
    elif not accept and present:
        _run([iptables, "-w", "-D", *rule], check=False)


def has_broker(layout: NetnsLayout, broker_id: int) -> bool:
    return layout.netns(broker_id) in netns_names() and layout.veth(broker_id) in link_names()


def add_broker(layout: NetnsLayout, broker_id: int) -> None:
    """Broker N's namespace and link (idempotent; a half-made pair is made again)."""
    if has_broker(layout, broker_id):
        return
    ns, veth, peer = layout.netns(broker_id), layout.veth(broker_id), layout.peer(broker_id)
    addr = layout.address(broker_id)
    if veth in link_names():
        ip("link", "del", veth)
    if ns not in netns_names():
        ip("netns", "add", ns)
    ip("link", "set", "lo", "up", netns=ns)
    ip("link", "add", veth, "type", "veth", "peer", "name", peer, "netns", ns)
    ip("link", "set", veth, "master", layout.bridge, "up")
    ip("addr", "add", f"{addr}/{layout.subnet.prefixlen}", "dev", peer, netns=ns)
    ip("link", "set", peer, "up", netns=ns)


def teardown(layout: NetnsLayout, is_ours: Callable[[int], bool]) -> None:
    """Remove every namespace and link of this cluster, whatever state they are in. Processes
    still inside a namespace are SIGKILLed if `is_ours(pid)` (our leftover brokers); others
    are left alone and keep their namespace alive, but lose its link."""
    for ns in netns_names():
        if layout.broker_of_netns(ns) is None:
            continue
        pids = [int(p) for p in ip("netns", "pids", ns, check=False).split() if p.isdigit()]
        doomed = [p for p in pids if is_ours(p)]
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while any(Path(f"/proc/{p}").exists() and is_ours(p) for p in doomed):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        ip("netns", "del", ns, check=False)
    # Deleting one end of a veth deletes both; the bridge last.
    for name in sorted(n for n in link_names() if layout.is_our_link(n)):
        if name != layout.bridge:
            ip("link", "del", name, check=False)
    if layout.bridge in link_names():
        ip("link", "del", layout.bridge)
    _accept_bridged_traffic(layout.bridge, accept=False)
    left = [n for n in link_names() if layout.is_our_link(n)]
    if left:
        raise ClusterError(f"could not delete links {left}")


# --- faults --------------------------------------------------------------------------------


def _bpf(insns: Sequence[tuple[int, int, int, int]]) -> str:
    return f"{len(insns)}," + ",".join(f"{c} {jt} {jf} {k}" for c, jt, jf, k in insns)


def cut_program(layout: NetnsLayout, cut: Cut, peer_offset: int) -> str:
    """The classic BPF program of a cut for one direction of broker N's veth; `peer_offset`
    is where the other end's IPv4 address is (destination on ingress, source on egress)."""
    if cut == "all":
        return _bpf(
            [
                (_LDH_ABS, 0, 0, _ETHERTYPE),
                (_JEQ_K, 1, 0, _ETH_P_ARP),  # ARP: pass
                (_RET_K, 0, 0, _TC_ACT_SHOT),
                (_RET_K, 0, 0, _TC_ACT_UNSPEC),
            ]
        )
    net = layout.subnet
    return _bpf(
        [
            (_LDH_ABS, 0, 0, _ETHERTYPE),
            (_JEQ_K, 0, 5, _ETH_P_IP),  # not IPv4: pass
            (_LDW_ABS, 0, 0, peer_offset),
            (_JEQ_K, 3, 0, int(layout.gateway)),  # ZooKeeper and clients: pass
            (_AND_K, 0, 0, int(net.netmask)),
            (_JEQ_K, 0, 1, int(net.network_address)),  # another broker: drop
            (_RET_K, 0, 0, _TC_ACT_SHOT),
            (_RET_K, 0, 0, _TC_ACT_UNSPEC),
        ]
    )


def _require_link(layout: NetnsLayout, broker_id: int) -> None:
    if layout.veth(broker_id) not in link_names():
        raise ClusterError(
            f"broker {broker_id} has no network namespace link ({layout.veth(broker_id)}); "
            "is the cluster up?"
        )


def set_cut(layout: NetnsLayout, broker_id: int, cut: Cut | None) -> None:
    """Install (replacing any other) or, with None, remove broker N's cut."""
    veth = layout.veth(broker_id)
    if cut is None:
        if veth in link_names():
            tc("qdisc", "del", "dev", veth, "clsact", check=False)  # absent: nothing to undo
        return
    _require_link(layout, broker_id)
    tc("qdisc", "replace", "dev", veth, "clsact")
    for hook, offset in (("ingress", _IPV4_DST), ("egress", _IPV4_SRC)):
        program = cut_program(layout, cut, offset)
        filter_id = ["pref", "1", "handle", "1"]
        tc("filter", "replace", "dev", veth, hook, *filter_id, "bpf", "da", "bytecode", program)


def clear_degrade(layout: NetnsLayout, broker_id: int) -> None:
    ends = [(None, layout.veth(broker_id)), (layout.netns(broker_id), layout.peer(broker_id))]
    for netns, dev in ends:
        # "Cannot delete qdisc with handle of zero" when there is none: nothing to undo.
        tc("qdisc", "del", "dev", dev, "root", netns=netns, check=False)


def set_degrade(
    layout: NetnsLayout,
    broker_id: int,
    *,
    delay_ms: float = 0.0,
    jitter_ms: float = 0.0,
    loss_pct: float = 0.0,
) -> None:
    """netem on both ends of broker N's link (replacing an earlier degrade)."""
    _require_link(layout, broker_id)
    netem = ["netem"]
    if delay_ms or jitter_ms:
        netem += ["delay", f"{delay_ms:g}ms"] + ([f"{jitter_ms:g}ms"] if jitter_ms else [])
    if loss_pct:
        netem += ["loss", f"{loss_pct:g}%"]
    ends = [(None, layout.veth(broker_id)), (layout.netns(broker_id), layout.peer(broker_id))]
    for netns, dev in ends:
        done = tc("qdisc", "replace", "dev", dev, "root", *netem, netns=netns, check=False)
        if done.returncode != 0:
            clear_degrade(layout, broker_id)
            why = (done.stderr or done.stdout).strip()
            if "kind is unknown" in why:
                raise ClusterError(
                    "degrade needs tc netem, which this kernel does not have "
                    f"(CONFIG_NET_SCH_NETEM / module sch_netem): {why}"
                )
            raise ClusterError(f"tc netem on {dev} failed: {why}")
