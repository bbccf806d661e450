"""The strength-over-time chart of one memory, computed server-side for an inline SVG.

`strength_chart` turns the memory's strength anchors (`service.strength`) into plot coordinates:
from each anchor the strength decays by the tenant's `DecayPolicy.strength_at` until the next
anchor, where it jumps (a merge, an update, a restore, the latest recall), and the last one
decays until now. The archive threshold is drawn as a line. The template draws it (numbers and
escaped labels only: no markup is built here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from rearview.service.lifecycle.strength import StrengthPoint
from rearview.service.policy import DecayPolicy
from rearview.shared.clock import to_iso

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 28
SAMPLES_PER_SEGMENT = 24
MIN_SPAN = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Marker:
    """An anchor on the chart: where, and what set the strength there."""

    x: float
    y: float
    label: str


@dataclass(frozen=True, slots=True)
class Tick:
    """An axis label at a coordinate."""

    at: float
    text: str


@dataclass(frozen=True, slots=True)
class StrengthChart:
    """Everything the SVG template needs; `summary` is the chart's text alternative."""

    width: int
    height: int
    polyline: str
    markers: list[Marker]
    threshold_y: float
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    summary: str


def strength_chart(
    points: Sequence[StrengthPoint], decay: DecayPolicy, now: datetime
) -> StrengthChart | None:
    """The chart of `points` decaying until `now`, or None when there is nothing to draw."""
    if not points:
        return None
    start = points[0].at
    end = max(now, points[-1].at, start + MIN_SPAN)
    samples: list[tuple[datetime, float]] = []
    for i, point in enumerate(points):
        until = points[i + 1].at if i + 1 < len(points) else end
        for step in range(SAMPLES_PER_SEGMENT + 1):
            t = point.at + (until - point.at) * (step / SAMPLES_PER_SEGMENT)
            samples.append((t, decay.strength_at(point.strength, point.importance, point.at, t)))
    top_value = max(1.0, *(p.strength for p in points)) * 1.1
    span = (end - start).total_seconds()

    def x(t: datetime) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * (t - start).total_seconds() / span, 1)

    def y(value: float) -> float:
        return round(HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * value / top_value, 1)

    now_strength = samples[-1][1]
    summary = (
        f"Strength from {to_iso(start)[:10]} to {to_iso(end)[:10]}: {len(points)} anchor(s), "
        f"now {now_strength:.2f}; archived below {decay.archive_threshold:g}."
    )
    return StrengthChart(
        width=WIDTH,
        height=HEIGHT,
        polyline=" ".join(f"{x(t)},{y(v)}" for t, v in samples),
        markers=[
            Marker(x(p.at), y(p.strength), f"{p.label} {to_iso(p.at)}: {p.strength:.2f}") for p in points
        ],
        threshold_y=y(decay.archive_threshold),
        x_ticks=[Tick(x(start), to_iso(start)[:10]), Tick(x(end), to_iso(end)[:10])],
        y_ticks=[Tick(y(v), f"{v:g}") for v in (0.0, 0.5, 1.0, 1.5, 2.0) if v <= top_value],
        plot_left=LEFT,
        plot_right=WIDTH - RIGHT,
        plot_top=TOP,
        plot_bottom=HEIGHT - BOTTOM,
        summary=summary,
    )
