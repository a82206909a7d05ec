"""The PDF report's Thai, Devanagari, Arabic and Hebrew: drawn in Noto Sans (fonts-noto-core),
shaped with HarfBuzz, right-to-left text in visual order (python-bidi).

The PDF is read back with pypdf: the glyphs each text operator draws (the bytes of its
string, mapped through the font's ToUnicode CMap to a character, then to the glyph id of the
original TTF: its cmap, or U+E000 + glyph id for a glyph with no character of its own) are
compared with what HarfBuzz makes of the name; the embedded subset is asked, with uharfbuzz,
whether each drawn code has an outline. (Escapes, not the characters, keep the source ASCII.)"""

from __future__ import annotations

import io
import pathlib
import re
import subprocess
import sys

import pytest
import uharfbuzz

from audit.exports import pdf, write_pdf
from audit.exports.document import Column, ReportDocument, Section

SOMCHAI = "\u0e2a\u0e21\u0e0a\u0e32\u0e22 \u0e43\u0e08\u0e14\u0e35"  # Thai: Somchai Jaidee
RAJESH = "\u0930\u093e\u091c\u0947\u0936 \u0915\u0941\u092e\u093e\u0930"  # Devanagari: Rajesh Kumar
KSHATRIYA = "\u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f"  # conjuncts (ksha, tra), a vowel sign before
MUHAMMAD = "\u0645\u062d\u0645\u062f"
ALI = "\u0639\u0644\u064a"
DAVID, COHEN = "\u05d3\u05d5\u05d3", "\u05db\u05d4\u05df"
NAMES = [SOMCHAI, RAJESH, KSHATRIYA, f"{MUHAMMAD} {ALI}", f"{DAVID} {COHEN}"]
NOTO = {
    "ChThai": "NotoSansThai-Regular",
    "ChDevanagari": "NotoSansDevanagari-Regular",
    "ChArabic": "NotoSansArabic-Regular",
    "ChHebrew": "NotoSansHebrew-Regular",
}

pytestmark = pytest.mark.skipif(
    len(pdf._script_fonts()) < 4,
    reason="Noto Sans Thai, Devanagari, Arabic and Hebrew are not installed (apt-get install fonts-noto-core)",
)


def report(names=NAMES) -> ReportDocument:
    cols = [Column("patron", "Patron"), Column("bet", "Bet", "money"), Column("note", "Note")]
    rows = [(name, 100 * i, f"seat {i}: {name}") for i, name in enumerate(names)]
    return ReportDocument(
        "Patrons",
        "",
        [("Banker", f"{DAVID} {COHEN}")],
        [Section("bets", "Bets", cols, lambda: iter(rows))],
        [],
    )


def written(doc: ReportDocument) -> bytes:
    fp = io.BytesIO()
    write_pdf(doc, fp)
    return fp.getvalue()


def hb_font(name: str) -> uharfbuzz.Font:
    """The original TTF of the registered font `name` (e.g. "ChArabic")."""
    return uharfbuzz.Font(uharfbuzz.Face(uharfbuzz.Blob(pdf.pdfmetrics.getFont(name).face._ttf_data)))


def shaped_gids(name: str, text: str, rtl: bool = False) -> list[int]:
    """What HarfBuzz draws for `text` (logical order) in `name`: glyph ids, in visual order."""
    buf = uharfbuzz.Buffer()
    buf.add_str(text)
    buf.guess_segment_properties()
    buf.direction = "rtl" if rtl else "ltr"
    uharfbuzz.shape(hb_font(name), buf, {})
    return [info.codepoint for info in buf.glyph_infos]


def nominal_gids(name: str, text: str) -> list[int]:
    """Each character's own glyph (an Arabic letter's isolated form), in logical order."""
    font = hb_font(name)
    return [font.get_nominal_glyph(ord(ch)) or 0 for ch in text]


def drawn(data: bytes) -> list[tuple[str, list[int]]]:
    """Every string drawn on the pages, in content-stream order, as (the font's base name
    without its subset tag, the original TTF's glyph ids drawn), for the Noto fonts; and the
    check, on the embedded subset, that each code drawn has an outline (spaces aside)."""
    import pypdf
    from pypdf.generic import ContentStream

    reader = pypdf.PdfReader(io.BytesIO(data))
    out: list[tuple[str, list[int]]] = []
    for page in reader.pages:
        fonts = page["/Resources"]["/Font"]
        font = None
        for operands, op in ContentStream(page.get_contents(), reader).operations:
            if op == b"Tf":
                font = fonts[operands[0]].get_object()
                continue
            if op not in (b"Tj", b"TJ") or font is None:
                continue
            base = str(font["/BaseFont"]).split("+")[-1]
            if not base.startswith("NotoSans"):
                continue
            cmap = {
                int(code, 16): int(uni, 16)
                for code, uni in re.findall(
                    rb"<([0-9A-F]{2})> <([0-9A-F]{4})>", font["/ToUnicode"].get_data()
                )
            }
            registered = next(k for k, v in NOTO.items() if v == base)
            original = hb_font(registered)
            subset = uharfbuzz.Font(
                uharfbuzz.Face(uharfbuzz.Blob(font["/FontDescriptor"]["/FontFile2"].get_data()))
            )
            items = operands[0] if op == b"TJ" else [operands[0]]
            gids = []
            for item in items:
                if not isinstance(item, str | bytes):
                    continue  # a TJ adjustment
                for code in getattr(item, "original_bytes", item):
                    uni = cmap[code]
                    gid = uni - 0xE000 if 0xE000 <= uni < 0xF900 else original.get_nominal_glyph(uni)
                    assert gid, (base, hex(uni))  # never .notdef
                    if uni != 0x20:
                        glyph = subset.get_nominal_glyph(code)
                        assert glyph, (base, code)
                        extents = subset.get_glyph_extents(glyph)
                        assert extents.width or extents.height, (base, hex(uni))  # an outline, not empty
                    gids.append(gid)
            out.append((base, gids))
    return out


def test_runs_send_the_four_scripts_to_noto_bold_next_to_bold():
    font = pdf.fonts().cond
    assert pdf._runs(f"Mr {SOMCHAI}", font) == [("Mr ", font), (SOMCHAI[:5], "ChThai"), (" ", font),
                                                  (SOMCHAI[6:], "ChThai")]  # fmt: skip
    assert pdf._runs(RAJESH, pdf.fonts().cond_bold)[0] == (RAJESH[:5], "ChDevanagari-Bold")
    # Arabic and Hebrew too, although DejaVu has glyphs for them (unjoined ones).
    assert pdf._runs(MUHAMMAD, font) == [(MUHAMMAD, "ChArabic")]
    assert pdf._runs(DAVID, font) == [(DAVID, "ChHebrew")]
    # A zero-width joiner stays in its script's run (it is a shaping control).
    assert pdf._runs(f"{KSHATRIYA[:2]}\u200d{KSHATRIYA[2:]}", font) == [
        (f"{KSHATRIYA[:2]}\u200d{KSHATRIYA[2:]}", "ChDevanagari")]  # fmt: skip


def test_bidi_puts_a_line_in_visual_order_and_mirrors_brackets():
    line = f"{MUHAMMAD} {ALI} (VIP) 12"
    assert pdf._levels(line) == [1] * 9 + [1] + [2] * 3 + [1, 1, 2, 2]  # python-bidi's, not the fallback
    assert "".join(ch for ch, _ in pdf._visual(line)) == f"12 (VIP) {ALI[::-1]} {MUHAMMAD[::-1]}"
    assert (
        "".join(ch for ch, _ in pdf._visual(f"Mr {DAVID} {COHEN} (x)"))
        == f"Mr {COHEN[::-1]} {DAVID[::-1]} (x)"
    )
    assert "".join(ch for ch, _ in pdf._visual(f"{DAVID} (x)")) == f"(x) {DAVID[::-1]}"  # mirrored
    # The runs drawn, left to right: each Hebrew word in its font, the words' order reversed.
    runs, _ = pdf._line(f"Mr {DAVID} {COHEN}", pdf.fonts().cond)
    assert [name for _, name, _ in runs] == [pdf.fonts().cond, "ChHebrew", pdf.fonts().cond, "ChHebrew"]


def test_widths_are_the_shaped_widths_and_wrapped_lines_fit():
    font = pdf.fonts().cond
    for text, name in [(MUHAMMAD, "ChArabic"), (KSHATRIYA, "ChDevanagari")]:
        buf = uharfbuzz.Buffer()
        buf.add_str(text)
        buf.guess_segment_properties()
        uharfbuzz.shape(hb_font(name), buf, {"kern": True, "liga": True})
        upem = hb_font(name).face.upem
        shaped = sum(p.x_advance for p in buf.glyph_positions) / upem * 10
        assert pdf._width(text, font, 10) == pytest.approx(shaped)
        assert shaped != pytest.approx(
            pdf.pdfmetrics.stringWidth(text, name, 10)
        )  # not one glyph per character
    long = " ".join(NAMES * 6)
    lines = pdf.wrap(long, font, pdf.BODY_SIZE, 80, 50)
    assert len(lines) > 5 and " ".join(lines) == long
    assert all(pdf._width(line, font, pdf.BODY_SIZE) <= 80 for line in lines)
    # A name too long for its line is not cut inside a cluster (a mark from its base).
    cut = pdf._cut(KSHATRIYA * 4, font, pdf.BODY_SIZE, 40)
    assert cut.endswith("\u2026") and not pdf._mid_cluster(KSHATRIYA * 4, len(cut) - 1)


def test_the_report_draws_the_names_in_noto_shaped_and_right_to_left():
    data = written(report())
    for base in NOTO.values():
        assert re.search(rb"/BaseFont /[A-Z]{6}\+" + base.encode(), data), base
    runs = drawn(data)
    fonts = {base for base, _ in runs}
    assert set(NOTO.values()) <= fonts
    strings = [gids for _, gids in runs]
    # Thai and Devanagari: HarfBuzz's glyphs (marks placed; conjuncts, the vowel sign before).
    for name, word in [("ChThai", SOMCHAI[:5]), ("ChDevanagari", RAJESH[:5]), ("ChDevanagari", KSHATRIYA)]:
        assert shaped_gids(name, word) in strings, word
    assert shaped_gids("ChDevanagari", KSHATRIYA) != nominal_gids("ChDevanagari", KSHATRIYA)
    # Arabic: joined (initial, medial, final forms; no letter in its isolated form) and right
    # to left (the word's last letter drawn first, and ALI left of MUHAMMAD).
    muhammad, ali = shaped_gids("ChArabic", MUHAMMAD, rtl=True), shaped_gids("ChArabic", ALI, rtl=True)
    assert not set(muhammad + ali) & set(nominal_gids("ChArabic", MUHAMMAD + ALI))
    assert muhammad[0] != nominal_gids("ChArabic", MUHAMMAD)[0]
    index = strings.index(ali)
    assert strings[index + 1] == muhammad  # the next Arabic run drawn, to the right (the space is DejaVu's)
    # Hebrew: right to left, COHEN drawn left of DAVID, each word's letters reversed.
    cohen = nominal_gids("ChHebrew", COHEN)[::-1]
    index = strings.index(cohen)
    assert strings[index + 1] == nominal_gids("ChHebrew", DAVID)[::-1]


FRESH = """
import sys
from tests.audit.test_pdf_scripts import report, written
for names in {before!r}:
    written(report(names))
sys.stdout.buffer.write(written(report()))
"""


def test_the_same_document_gives_the_same_bytes_whatever_was_drawn_before():
    # In a fresh process each time: a glyph's code must not depend on what this process drew
    # before (other names, other glyphs first).
    def fresh(before: list[list[str]]) -> bytes:
        script = FRESH.format(before=before)
        root = pathlib.Path(__file__).parents[2]
        return subprocess.run(
            [sys.executable, "-c", script], cwd=root, capture_output=True, check=True
        ).stdout

    first = fresh([])
    assert first.startswith(b"%PDF") and first == written(report())
    shri_dva = "\u0936\u094d\u0930\u0940 \u0926\u094d\u0935"  # other conjuncts, met first
    assert fresh([[shri_dva, KSHATRIYA[::-1], f"{ALI} {MUHAMMAD}", SOMCHAI[::-1]]]) == first


THREADS = """
import sys, threading
sys.setswitchinterval(1e-6)  # threads switch as often as they can: a race shows
from tests.audit.test_pdf_scripts import report, written
barrier, out = threading.Barrier(8), [None] * 8
def build(i):
    barrier.wait()  # all at once, on a cold process: fonts registered, glyph codes given
    out[i] = written(report())
threads = [threading.Thread(target=build, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
sys.stdout.buffer.write(b"".join(len(o).to_bytes(8, "big") + o for o in out))
"""


def test_threads_building_pdfs_at_once_give_the_bytes_of_one_alone():
    # Threads share the registered fonts and each face's glyph codes: eight documents begun at
    # the same instant in a fresh process (nothing registered yet) are each the document a
    # process makes alone.
    root = pathlib.Path(__file__).parents[2]
    raw = subprocess.run([sys.executable, "-c", THREADS], cwd=root, capture_output=True, check=True).stdout
    docs = []
    while raw:
        size = int.from_bytes(raw[:8], "big")
        docs.append(raw[8 : 8 + size])
        raw = raw[8 + size :]
    alone = written(report())
    assert len(docs) == 8 and all(doc == alone for doc in docs)


def test_without_noto_the_names_stay_in_the_base_font(monkeypatch):
    monkeypatch.setattr(pdf, "_script_fonts", lambda: {})
    pdf._line_cached.cache_clear()
    try:
        data = written(report())
        # Hebrew in DejaVu's glyphs, right to left still (not shaped: nothing in a Noto font).
        font = pdf.fonts().cond
        assert pdf._line(f"{DAVID} {COHEN}", font)[0] == ((f"{COHEN[::-1]} {DAVID[::-1]}", font, pytest.approx(
            pdf.pdfmetrics.stringWidth(f"{DAVID} {COHEN}", font, 1))),)  # fmt: skip
    finally:
        pdf._line_cached.cache_clear()
    assert b"NotoSans" not in data and b"DejaVuSansCondensed" in data
