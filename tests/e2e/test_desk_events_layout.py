"""The desk's events page on a tablet: below 1280px wide each event is a block of its own
(time, stream · seq, action, actor, subject, payload, hash, one under the other), so neither
the page nor the events' region scrolls sideways; at 1280px and wider it is a table. Events
with the longest things a row holds: a long stream name, a subject, a payload of 300
characters (opened, too) and its hash."""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction

from audit.services import record
from tests.e2e.a11y import audit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS_JS = r"""
() => {
  const region = document.querySelector('main [role=region]');
  return {
    page: document.scrollingElement.scrollWidth, viewport: innerWidth,
    region: region.scrollWidth, regionShown: region.clientWidth,
    rows: Array.from(document.querySelectorAll('tr[data-event]')).map((tr) => {
      const r = tr.getBoundingClientRect();
      return { left: r.left, right: r.right, display: getComputedStyle(tr).display };
    }),
  };
}
"""

# Each cell's box in the first event, in the page's order.
CELLS_JS = r"""
() => Array.from(document.querySelector('tr[data-event]').children).map((td) => {
  const r = td.getBoundingClientRect();
  return { label: td.dataset.label, top: r.top, bottom: r.bottom, left: r.left };
})
"""


def _events(auditor, commissario) -> None:
    for n in range(6):
        with transaction.atomic():
            record(stream=f"table_session:{123456789 + n}", actor=commissario if n % 2 else auditor,
                   action="minimum.changed", subject=commissario,
                   data={"old": 100_00, "new": 200_00, "reason": "a busy night at the big table " * 10,
                         "nested": {"deep": [1, 2, {"deeper": "x" * 120}]}})  # fmt: skip


def _no_sideways_scroll(page, where: str) -> None:
    widths = page.evaluate(WIDTHS_JS)
    assert widths["page"] <= widths["viewport"], (where, widths)
    assert widths["region"] <= widths["regionShown"], (where, widths)  # the events' region scrolls not either
    assert widths["rows"] and all(r["left"] >= 0 and r["right"] <= widths["viewport"] for r in widths["rows"]), (
        where, widths)  # fmt: skip


def test_the_events_stack_on_an_upright_tablet_and_nothing_scrolls_sideways(page_for, shoot, auditor, commissario):
    _events(auditor, commissario)
    page = page_for(auditor, viewport="portrait")  # 768x1024
    page.goto(page.base + "/desk/events/")
    _no_sideways_scroll(page, "768x1024")
    # each event a block: its lines one under the other, stream and seq on one line
    cells = page.evaluate(CELLS_JS)
    assert [c["label"] for c in cells] == ["Time", "Stream", "Seq", "Action", "Actor", "Subject", "Payload", "Hash"]
    by = {c["label"]: c for c in cells}
    assert by["Stream"]["top"] <= by["Seq"]["top"] < by["Stream"]["bottom"] and by["Seq"]["left"] > by["Stream"]["left"]
    lines = [by[label] for label in ("Time", "Stream", "Action", "Actor", "Subject", "Payload", "Hash")]
    assert all(upper["bottom"] <= lower["top"] + 0.5 for upper, lower in itertools.pairwise(lines)), cells
    # a payload opened still wraps inside its block
    page.locator("tr[data-event] td.payload summary").first.tap()
    _no_sideways_scroll(page, "768x1024, a payload opened")
    shoot(page, "desk-events-portrait")  # to look at (test-artifacts/screenshots/)
    found = audit(page)
    assert found == [], found
    # oldest first, with the seq range: the same blocks
    page.goto(page.base + "/desk/events/?seq_min=1&order=oldest&page_size=3")
    _no_sideways_scroll(page, "768x1024, oldest first")
    # a tablet held sideways, and a window just under 1280px: blocks too
    for width, height in ((1024, 768), (1279, 800)):
        page.set_viewport_size({"width": width, "height": height})
        _no_sideways_scroll(page, f"{width}x{height}")
        assert {r["display"] for r in page.evaluate(WIDTHS_JS)["rows"]} == {"flex"}
    # at 1280px and wider, a table
    page.set_viewport_size({"width": 1280, "height": 800})
    assert {r["display"] for r in page.evaluate(WIDTHS_JS)["rows"]} == {"table-row"}
