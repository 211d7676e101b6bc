"""The chaos timeline: one colour per fault kind, every kind of mark in the legend, and the
legend beside the plot, not over the data."""

from __future__ import annotations

import matplotlib.pyplot as plt

from minikafka.chaos.history import (
    ControllerObservation,
    FaultWindow,
    History,
    LeaderObservation,
    Outcome,
    ProduceAttempt,
)
from minikafka.chaos.nemesis import NEMESIS_OPS
from minikafka.chaos.plot import (
    ACK_COLOR,
    CONTROLLER_CHANGE_COLOR,
    FAULT_COLORS,
    LEADER_CHANGE_COLOR,
    timeline_figure,
)


def test_every_fault_kind_has_a_colour_of_its_own() -> None:
    assert set(FAULT_COLORS) == set(NEMESIS_OPS)
    colours = list(FAULT_COLORS.values())
    assert len(set(colours)) == len(colours)
    assert not {ACK_COLOR, LEADER_CHANGE_COLOR, CONTROLLER_CHANGE_COLOR} & set(colours)


def test_the_legend_names_every_mark_and_stays_outside_the_axes() -> None:
    history = History(
        topic="t",
        attempts=[ProduceAttempt(i, i * 0.1, Outcome.OK, i * 0.1 + 0.01, 0, i) for i in range(300)],
        faults=[
            FaultWindow("kill", "broker-2", 5.0, 9.0),
            FaultWindow("controller", "broker-1", 12.0, 15.0),
            FaultWindow("restart", "broker-3", 20.0, 20.0),
        ],
        leaders=[LeaderObservation(0.0, 0, 2, 0), LeaderObservation(6.0, 0, 1, 1)],
        controllers=[ControllerObservation(0.0, 1, 1), ControllerObservation(13.0, 2, 2)],
    )
    fig = timeline_figure(history)
    try:
        (ax,) = fig.axes
        legend = ax.get_legend()
        labels = [t.get_text() for t in legend.get_texts()]
        assert labels == [
            "acked writes/s",
            "kill",
            "controller",
            "restart",
            "leader change",
            "controller change",
        ]
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
    finally:
        plt.close(fig)
