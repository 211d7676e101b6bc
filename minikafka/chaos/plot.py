"""The timeline plot of a chaos run: acknowledged writes per second, fault windows shaded,
leader and controller changes marked."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.chaos.history import History, Outcome

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ACK_COLOR = "tab:blue"
LEADER_CHANGE_COLOR = "black"
CONTROLLER_CHANGE_COLOR = "tab:green"
# One colour per fault kind, none of them the lines' colours above.
FAULT_COLORS: dict[str, str] = {
    "kill": "tab:red",
    "pause": "tab:orange",
    "partition": "tab:purple",
    "partition-from-brokers": "tab:pink",
    "zk-expire": "tab:olive",
    "restart": "tab:cyan",
    "controller": "tab:brown",
    "coordinator": "gold",
    "partition-2013": "darkslateblue",
    "isr-change-zk-expire": "tab:gray",
    "reassign": "teal",
}


def ack_rate(history: History, bucket_s: float = 1.0) -> tuple[list[float], list[float]]:
    """(bucket start times, acknowledged writes per second in each) over the produce phase."""
    start, end = history.bounds()
    counts: Counter[int] = Counter(
        int((a.complete_time - start) // bucket_s)
        for a in history.attempts
        if a.outcome is Outcome.OK and a.complete_time is not None
    )
    n = max(1, int((end - start) // bucket_s) + 1)
    return [start + i * bucket_s for i in range(n)], [counts[i] / bucket_s for i in range(n)]


def plot_timeline(history: History, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = timeline_figure(history)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # the legend, outside the axes, too
    plt.close(fig)


def timeline_figure(history: History) -> Figure:
    import matplotlib

    matplotlib.use("Agg")  # files only, no screen
    import matplotlib.pyplot as plt

    times, rates = ack_rate(history)
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.plot(times, rates, color=ACK_COLOR, linewidth=1.2, label="acked writes/s")
    labelled: set[str] = set()
    for f in history.faults:
        end = f.end if f.end is not None else history.bounds()[1]
        label = None if f.op in labelled else f.op
        labelled.add(f.op)
        ax.axvspan(
            f.start,
            max(end, f.start + 0.2),  # an instant fault (zk-expire, restart) still shows
            alpha=0.25,
            color=FAULT_COLORS.get(f.op, "grey"),
            label=label,
        )
    first = True
    seen: dict[int, int] = {}
    for o in history.leaders:
        if o.partition in seen and seen[o.partition] != o.leader and o.leader >= 0:
            ax.axvline(
                o.time,
                color=LEADER_CHANGE_COLOR,
                linewidth=0.6,
                linestyle=":",
                label="leader change" if first else None,
            )
            first = False
        seen[o.partition] = o.leader
    for i, c in enumerate(history.controllers[1:]):
        ax.axvline(
            c.time,
            color=CONTROLLER_CHANGE_COLOR,
            linewidth=0.8,
            linestyle="--",
            label="controller change" if i == 0 else None,
        )
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("acknowledged writes / s")
    ax.set_title(f"minikafka chaos: topic {history.topic}")
    # Outside the axes, on the right: a legend inside would cover the data.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize="small")
    return fig
