"""The strength chart's geometry and the history timeline: pure functions of the data they are given."""

from __future__ import annotations

from datetime import timedelta

from rearview.models import HistoryAction, HistoryEvent
from rearview.service.lifecycle.strength import StrengthPoint
from rearview.service.policy import DecayPolicy
from rearview.ui.charts import SAMPLES_PER_SEGMENT, strength_chart
from rearview.ui.views import edit_request, split_tags, timeline
from tests.factories import T0, make_memory

DECAY = DecayPolicy()


def _values(polyline: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (p.split(",") for p in polyline.split())]


def test_the_curve_decays_between_anchors_and_jumps_at_a_recall() -> None:
    points = [
        StrengthPoint(T0, 1.0, 3, "created"),  # importance 3: half-life 30 days
        StrengthPoint(T0 + timedelta(days=30), 0.6, 3, "recalled"),
    ]
    chart = strength_chart(points, DECAY, T0 + timedelta(days=60))
    assert chart is not None
    samples = _values(chart.polyline)
    assert len(samples) == 2 * (SAMPLES_PER_SEGMENT + 1)
    first_segment, second_segment = samples[: SAMPLES_PER_SEGMENT + 1], samples[SAMPLES_PER_SEGMENT + 1 :]
    ys = [y for _, y in first_segment]
    assert ys == sorted(ys)  # SVG y grows downwards: strength only falls within a segment
    scale = (chart.plot_bottom - chart.plot_top) / 1.1  # the top of the plot is 1.1 x the strongest anchor
    assert abs((chart.plot_bottom - ys[-1]) / scale - 0.5) < 0.01  # one half-life later: 0.5
    assert second_segment[0][1] < ys[-1]  # the recall lifts it (0.6 > 0.5)
    assert abs((chart.plot_bottom - second_segment[-1][1]) / scale - 0.3) < 0.01
    assert [m.label.split()[0] for m in chart.markers] == ["created", "recalled"]
    assert abs((chart.plot_bottom - chart.threshold_y) / scale - DECAY.archive_threshold) < 0.01
    xs = [x for x, _ in samples]
    assert xs == sorted(xs) and xs[0] == chart.plot_left and xs[-1] == chart.plot_right


def test_no_points_no_chart() -> None:
    assert strength_chart([], DECAY, T0) is None


def test_timeline_lists_only_changed_fields_as_text() -> None:
    event = HistoryEvent(
        id="e1", tenant_id="t1", memory_id="m1", action=HistoryAction.UPDATED, at=T0, actor="default",
        before={"content": "<b>old</b>", "tags": ["a"], "version": 1},
        after={"content": "<b>new</b>", "tags": ["a", "b"], "version": 2},
    )  # fmt: skip
    (entry,) = timeline([event])
    assert [(c.field, c.before, c.after) for c in entry.changes] == [
        ("content", "<b>old</b>", "<b>new</b>"),  # raw text: the template escapes it
        ("tags", "a", "a, b"),
        ("version", "1", "2"),
    ]


def test_edit_sends_only_what_changed() -> None:
    current = make_memory("User prefers tea", tags=["drinks"]).view()
    assert (
        edit_request({"content": ["User prefers tea"], "tags": ["drinks"], "importance": ["3"]}, current, "a")
        is None
    )
    req = edit_request(
        {"content": ["User prefers tea"], "tags": ["drinks, tea"], "version": ["1"]}, current, "a"
    )
    assert req is not None and (req.content, req.tags, req.importance, req.expected_version) == (
        None, ["drinks", "tea"], None, 1,
    )  # fmt: skip
    assert split_tags(" a, ,b,a ") == ["a", "b"]
