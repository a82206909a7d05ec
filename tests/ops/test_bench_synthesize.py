"""bench/report.py and bench/load.py write a synthesized day straight in SQL: the test keeps
that SQL in step with the models (a NOT NULL column added later broke both, unseen)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tables.models import Bank, Coup, Posting

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_the_benchmarks_synthesized_day_fits_the_models():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import report
    finally:
        sys.path.remove(str(ROOT / "bench"))
    day_id = report.synthesize(120, 3)
    coups = Coup.objects.filter(session__gaming_day_id=day_id)
    assert coups.count() == 120 and not coups.exclude(state="settled").exists()
    assert Bank.objects.filter(session__gaming_day_id=day_id).exists()
    assert sum(Posting.objects.filter(session__gaming_day_id=day_id).values_list("amount", flat=True)) == 0
