"""The timeline plot of a chaos run: acknowledged writes per second, fault windows shaded,
leader and controller changes marked."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from minikafka.chaos.history import History, Outcome


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
    import matplotlib

    matplotlib.use("Agg")  # files only, no screen
    import matplotlib.pyplot as plt

    times, rates = ack_rate(history)
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.plot(times, rates, color="tab:blue", linewidth=1.2, label="acked writes/s")
    colors = {"kill": "tab:red", "pause": "tab:orange", "partition": "tab:purple"}
    labelled: set[str] = set()
    for f in history.faults:
        end = f.end if f.end is not None else history.bounds()[1]
        label = None if f.op in labelled else f.op
        labelled.add(f.op)
        ax.axvspan(
            f.start, max(end, f.start + 0.2), alpha=0.2, color=colors.get(f.op, "grey"), label=label
        )
    first = True
    seen: dict[int, int] = {}
    for o in history.leaders:
        if o.partition in seen and seen[o.partition] != o.leader and o.leader >= 0:
            ax.axvline(
                o.time,
                color="black",
                linewidth=0.6,
                linestyle=":",
                label="leader change" if first else None,
            )
            first = False
        seen[o.partition] = o.leader
    for c in history.controllers[1:]:
        ax.axvline(c.time, color="tab:green", linewidth=0.8, linestyle="--")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("acknowledged writes / s")
    ax.set_title(f"minikafka chaos: topic {history.topic}")
    ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
