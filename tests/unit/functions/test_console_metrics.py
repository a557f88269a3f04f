"""The console's health page summarises `/metrics`: one total per family, no creation times."""

from __future__ import annotations

from functions.console.health import metrics_summary


def test_the_health_page_sums_each_metric_family_and_skips_creation_times() -> None:
    text = (
        '# HELP a_total Things.\n# TYPE a_total counter\na_total{x="1"} 2.0\na_total{x="2"} 3.0\n'
        '# HELP a_created Things.\n# TYPE a_created gauge\na_created{x="1"} 1.7e9\n'
        '# HELP h Sizes.\n# TYPE h histogram\nh_bucket{le="+Inf"} 4.0\nh_count 4.0\nh_sum 10.0\n'
    )
    assert metrics_summary(text) == [("a", "Things.", 5.0), ("h", "Sizes.", 4.0)]
