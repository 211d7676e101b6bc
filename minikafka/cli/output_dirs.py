"""Where the commands that write files (`pipeline`, `chaos`) put them unless told: under
the local cluster's data dir, never the current directory, where they would litter
whatever it is (a checkout of this repository, say)."""

from __future__ import annotations

from pathlib import Path

from minikafka.cluster.data_dir import STATE_FILE, default_data_dir, user_data_home

# Beside the default data dir, for a cluster without one here (reached with
# --bootstrap-server, docker-compose's...): a name that says why the output is there.
OTHER_CLUSTERS_DIR = "other-clusters"


def other_clusters_dir(name: str) -> Path:
    """$XDG_DATA_HOME/minikafka/other-clusters/NAME."""
    return user_data_home() / OTHER_CLUSTERS_DIR / name


def default_output_dir(name: str, what: str, flag: str) -> tuple[Path, str]:
    """<data dir>/NAME when the default data dir holds a cluster (its cluster.json), else
    other_clusters_dir(NAME); and a line saying where `what` goes, and why there."""
    data_dir = default_data_dir()
    if (data_dir / STATE_FILE).is_file():
        path = data_dir / name
        return (
            path,
            f"{what} goes to {path}, in the local cluster's data dir ({flag} DIR: elsewhere)",
        )
    path = other_clusters_dir(name)
    return path, (
        f"no local cluster in {data_dir} (no {STATE_FILE}), so {what} goes to {path} "
        f"({flag} DIR: elsewhere)"
    )
