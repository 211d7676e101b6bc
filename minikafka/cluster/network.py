"""The network of a local cluster in netns mode: its subnet, bringing it up and down, and
the record of its faults (network-faults.json, for `status` and the other `minikafka cluster`
commands). `netns.py` makes the topology and the faults (ip, tc); the faults' interface is
`network_faults.py`'s.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from minikafka.cluster import netns
from minikafka.cluster.data_dir import DataDir
from minikafka.cluster.errors import ClusterError
from minikafka.cluster.state import locked, write_json


def load_faults(data_dir: DataDir) -> dict[int, dict[str, Any]]:
    """The faults in force, per broker that has one (none when none are recorded)."""
    path = data_dir.faults_path
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ClusterError(f"cannot read {path}: {e}") from e
    return {int(k): dict(v) for k, v in data.get("brokers", {}).items()}


class ClusterNetwork:
    """The netns-mode network of the cluster in `data_dir`, laid out as `layout`;
    `subnet_auto`: the subnet was picked for us (so `up` may move off it)."""

    def __init__(self, data_dir: DataDir, layout: netns.NetnsLayout, subnet_auto: bool) -> None:
        self._dir = data_dir
        self.layout = layout
        self.subnet_auto = subnet_auto

    @classmethod
    def for_data_dir(
        cls, data_dir: DataDir, saved_net: Mapping[str, Any], subnet: str | None
    ) -> ClusterNetwork:
        """The saved cluster id (so names stay put if the data dir moves), the given subnet,
        else the saved one, else a free one (checked again at `up`)."""
        cid = str(saved_net.get("id") or netns.cluster_id_for(data_dir.root))
        if subnet is not None:
            return cls(data_dir, netns.NetnsLayout(cid, netns.parse_subnet(subnet)), False)
        if saved_net.get("mode") == "netns" and saved_net.get("subnet"):
            net = ipaddress.IPv4Network(saved_net["subnet"])
            return cls(data_dir, netns.NetnsLayout(cid, net), bool(saved_net.get("subnet_auto")))
        try:
            net = netns.pick_subnet(cid, own_links=[netns.bridge_name(cid)])
        except (ClusterError, OSError, ValueError):
            # No `ip` to look with: the first choice; `start` will say what is missing.
            net = netns.preferred_subnet(cid)
        return cls(data_dir, netns.NetnsLayout(cid, net), True)

    def state(self) -> dict[str, Any]:
        """What cluster.json and `status` say of the network."""
        return {
            "mode": "netns",
            "id": self.layout.cluster_id,
            "subnet": str(self.layout.subnet),
            "subnet_auto": self.subnet_auto,
            "gateway": str(self.layout.gateway),
            "bridge": self.layout.bridge,
        }

    # --- up and down ---------------------------------------------------------------------

    def remove_leftovers(self, is_ours: Callable[[int], bool]) -> None:
        """Remove what a crashed run left: namespaces, links, the bridge (processes still in
        a namespace are killed if `is_ours(pid)`)."""
        netns.teardown(self.layout, is_ours)

    def move_off_taken_subnet(self) -> ipaddress.IPv4Network | None:
        """Another subnet if someone else took ours since it was picked (ClusterError if it
        was given); returns the one left, None if it stays."""
        layout = self.layout
        conflicts = netns.subnet_conflicts(layout.subnet, [layout.bridge])
        if not conflicts:
            return None
        if not self.subnet_auto:
            raise ClusterError(
                f"subnet {layout.subnet} is already in use here ({'; '.join(conflicts)}); "
                "choose another one"
            )
        subnet = netns.pick_subnet(layout.cluster_id, own_links=[layout.bridge])
        self.layout = netns.NetnsLayout(layout.cluster_id, subnet)
        return layout.subnet

    def create(self, broker_ids: Iterable[int]) -> None:
        """The bridge and one namespace per broker, with no faults."""
        with locked(self._dir):
            self.save_faults({})
        netns.setup_bridge(self.layout)
        for bid in broker_ids:
            netns.add_broker(self.layout, bid)

    def down(self, is_ours: Callable[[int], bool]) -> None:
        """Remove the namespaces, links and bridge (processes still in a namespace are
        killed if `is_ours(pid)`); the faults go with them."""
        netns.teardown(self.layout, is_ours)
        with locked(self._dir):
            self._dir.faults_path.unlink(missing_ok=True)

    # --- faults --------------------------------------------------------------------------

    def set_fault(
        self,
        broker_id: int,
        *,
        cut: netns.Cut | None = None,
        degrade: dict[str, float] | None = None,
    ) -> None:
        """Cut or degrade broker N's link (in place of its cut or degrade), and record it."""
        with locked(self._dir):
            faults = self.load_faults()
            entry = faults.setdefault(broker_id, {})
            if cut is not None:
                netns.set_cut(self.layout, broker_id, cut)
                entry["cut"] = cut
            if degrade is not None:
                netns.set_degrade(self.layout, broker_id, **degrade)
                entry["degrade"] = degrade
            self.save_faults(faults)

    def heal(self, broker_ids: Iterable[int], *, with_recorded: bool) -> None:
        """Undo every fault of these brokers; `with_recorded`: and of every broker with a
        recorded fault."""
        with locked(self._dir):
            faults = self.load_faults()
            ids = sorted({*broker_ids, *faults}) if with_recorded else list(broker_ids)
            for bid in ids:
                netns.set_cut(self.layout, bid, None)
                netns.clear_degrade(self.layout, bid)
                faults.pop(bid, None)
            self.save_faults(faults)

    def load_faults(self) -> dict[int, dict[str, Any]]:
        return load_faults(self._dir)

    def save_faults(self, faults: Mapping[int, Mapping[str, Any]]) -> None:
        """Record the faults in force (the caller holds the data dir's lock)."""
        brokers = {str(bid): dict(f) for bid, f in sorted(faults.items()) if f}
        write_json(self._dir.faults_path, {"version": 1, "brokers": brokers})
