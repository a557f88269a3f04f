"""The console's health page summarises `/metrics`: one row per family, a histogram's count apart from its sum,
no creation times; and every page shows a missing value (`None`) as an em dash, never the word."""

from __future__ import annotations

from functions.console._pages import BLANK, templates
from functions.console.health import MetricRow, metrics_summary


def test_the_health_page_keeps_a_histograms_count_apart_from_its_sum_and_skips_creation_times() -> None:
    text = (
        '# HELP a_total Things.\n# TYPE a_total counter\na_total{x="1"} 2.0\na_total{x="2"} 3.0\n'
        '# HELP a_created Things.\n# TYPE a_created gauge\na_created{x="1"} 1.7e9\n'
        "# HELP g Level.\n# TYPE g gauge\ng 7.0\n"
        '# HELP h Sizes.\n# TYPE h histogram\nh_bucket{le="+Inf"} 4.0\nh_count 4.0\nh_sum 10.0\n'
    )
    assert metrics_summary(text) == [
        MetricRow("a", "Things.", "counter", 5.0),
        MetricRow("g", "Level.", "gauge", 7.0),
        MetricRow("h", "Sizes.", "histogram", 4.0, 10.0),
    ]


def test_a_console_page_shows_none_as_an_em_dash_and_escapes_the_rest() -> None:
    page = templates.from_string("<td>{{ missing }}</td><td>{{ zero }}</td><td>{{ text }}</td>")
    shown = page.render(missing=None, zero=0, text="<b>None</b>")
    assert shown == f"<td>{BLANK}</td><td>0</td><td>&lt;b&gt;None&lt;/b&gt;</td>"
