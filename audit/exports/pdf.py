"""The PDF export: A4 landscape, drawn page by page on a reportlab canvas as the rows come.

Pages: a cover (title, subtitle, the facts, a contents table whose row counts and page
numbers are filled in at the end), then the sections one after another, each a table
whose header row is repeated on every page it spans, then the charts (two per page, as
reportlab VerticalBarCharts). Every page has a running header (title, subtitle) and a
footer (the audit seal when the facts carry one, "Page n of N").

Text: DejaVu Sans (condensed for the tables), embedded as subsets, so Italian accents and
"€" render. When the DejaVu TTFs are absent the writer falls back to Helvetica, which
has the accents but whose euro sign is unreliable, so "€" is written "EUR" then.
Chinese, Japanese and Korean, which DejaVu has no glyphs for (a patron's name), are drawn
in ReportLab's built-in Adobe CID fonts, run by run within a line (see _runs): nothing to
install on the server, but these fonts are not embedded, so the viewer draws them with
its own CJK fonts (Acrobat's Asian font pack, the system's); the text extracts right
everywhere. Thai, Devanagari, Arabic and Hebrew are drawn in Noto Sans Thai, Devanagari,
Arabic, Hebrew (fonts-noto-core; regular and bold), run by run in the same way, embedded as
subsets, and shaped with HarfBuzz (uharfbuzz; drawn through ReportLab's ShapedStr): Arabic
joined, Devanagari with its conjuncts and reordered vowel signs, Thai marks placed. A line
with right-to-left text is put in visual order first, by the Unicode bidirectional algorithm
(python-bidi's levels, brackets mirrored): Arabic and Hebrew read right to left, a Latin word
or a number among them left to right; a cell keeps its column's alignment. Widths (wrapping,
column sizes, alignment) are the shaped widths, and a cut never separates a mark from its
base. Copying text: a glyph with no character of its own (a conjunct, a mark's variant) is
written as U+E000 + its glyph id, so it copies as a private-use character, and Arabic's joined
forms copy as presentation forms; the CSV and XLSX carry the names as typed. Without the
Noto TTFs these scripts stay in the base font, as before: Thai and Devanagari as boxes,
Arabic and Hebrew in DejaVu's glyphs, Arabic unjoined (both in visual order now). Chart
labels (one font per label; table numbers today) are not shaped nor reordered. A text cell
wraps to at most ten lines (a moment to two: date, time) and the last line ends in "…" when
cut. A figure is never cut: a table too wide for the page is set in a smaller type (down to
5.5pt) so that its figures keep one line each, and should one still not fit, it wraps. Money
as "1,234.50" in columns titled "... (€)"; see formatting.py. The words the writer adds
("Facts", "Page 1 of 9", "No rows.") are in the document's language, and so are its figures
("1.234,50" in Italian).

Memory: bounded, whatever the size of the day. No row is kept once drawn, and each page is
written to the file as soon as it is finished (_StreamingDocument: reportlab's own document
would keep every page until save()); what stays until the end is what all pages share (the
fonts, the forms, the catalog). The xref offsets and the page tree's kids go to temporary
files, so even they do not grow in memory.

Determinism: reportlab's invariant mode (fixed document id) and the creation date taken
from `created` (the document's, or a fixed epoch), so the same document gives the same
bytes, whatever the process drew before (a shaped glyph's code is its glyph id's, see
_shaped)."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
import os
import re
import tempfile
import threading
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, BinaryIO

import uharfbuzz
from bidi import get_base_level, get_display
from bidi.mirror import MIRRORED
from reportlab.graphics import renderPDF
from reportlab.graphics.charts.barcharts import VerticalBarChart
from reportlab.graphics.shapes import Drawing, String
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, landscape
from reportlab.pdfbase import pdfdoc, pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.pdfbase.ttfonts import ShapeData, ShapedStr, TTFont
from reportlab.pdfgen.canvas import Canvas

from audit.exports.document import Chart, Column, ReportDocument, Section
from audit.exports.formatting import (
    chart_value_display,
    created_of,
    datetime_display,
    display_cell,
    fact_text,
    in_language,
    money_display,
    number_display,
    pgettext,
)
from audit.exports.formatting import gettext as _  # Django's, when it is configured

CONTENT_TYPE = "application/pdf"
EXTENSION = "pdf"

PAGE_W, PAGE_H = landscape(A4)
MARGIN = 36.0
CONTENT_TOP = PAGE_H - 52.0
CONTENT_BOTTOM = 46.0
CONTENT_W = PAGE_W - 2 * MARGIN

BODY_SIZE = 7.5
BODY_LEADING = 9.0
CELL_PAD = 3.0
MAX_TEXT_LINES = 10  # a reconstruction's cards and violations, read in full
MAX_DATETIME_LINES = 3  # date, then time, when the column is narrow; then an offset (formatting.py)
MAX_FIGURE_LINES = 3  # a figure wider than its column even at the smallest size (never seen)
LAYOUT_SAMPLE = 200  # rows read ahead to size the columns
MAX_HEADER_LINES = 5
# A section's note: what its figures mean, its totals and what is missing (the sessions and the
# handovers not counted, by name); the drawers' note takes six lines in Italian.
MAX_NOTE_LINES = 10
MIN_BODY_SIZE = 5.5  # a table too wide for the page is set down to this size before anything is cut
HEADING_H = 20.0  # the section title line (and "... (continued)")
SECTION_GAP = 16.0

INK = colors.HexColor("#1A1A1A")
MUTED = colors.HexColor("#5A6270")
NAVY = colors.HexColor("#1F3A5F")
ZEBRA = colors.HexColor("#EEF2F7")
RULE = colors.HexColor("#B8C2CF")

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_FONT_DIRS = (
    "/usr/share/fonts/truetype/dejavu",
    "/usr/share/fonts/dejavu",
    "/usr/share/fonts/TTF",
    "/usr/local/share/fonts",
)


@dataclass(frozen=True)
class _Fonts:
    regular: str
    bold: str
    cond: str
    cond_bold: str
    mono: str
    euro: bool  # whether "€" can be drawn


# One lock for ReportLab's and this module's shared state: registering a font (a second TTFont
# under the same name would replace the face a document has begun with), giving a glyph its
# code in a face (_shape), and subsetting a font into a document (the face reads its file
# through one cursor). Taken once per font for the first, for a glyph not met before for the
# second, once per font and document for the third: threads (gunicorn's gthread workers, a
# threaded Celery pool) build PDFs side by side as processes do.
_LOCK = threading.RLock()


def _once(function):
    """`functools.cache`, with each first call made under _LOCK: never two registrations."""
    hits: dict[tuple, Any] = {}
    missing = object()

    @functools.wraps(function)
    def call(*args):
        value = hits.get(args, missing)
        if value is missing:
            with _LOCK:
                value = hits.get(args, missing)
                if value is missing:
                    value = hits[args] = function(*args)
        return value

    call.cache_clear = hits.clear  # type: ignore[attr-defined]
    return call


@_once
def fonts() -> _Fonts:
    """DejaVu when installed (registered once per process), else the standard fonts."""
    files = {
        "ChSans": "DejaVuSans.ttf",
        "ChSans-Bold": "DejaVuSans-Bold.ttf",
        "ChSansCond": "DejaVuSansCondensed.ttf",
        "ChSansCond-Bold": "DejaVuSansCondensed-Bold.ttf",
        "ChMono": "DejaVuSansMono.ttf",
    }
    found: dict[str, str] = {}
    for name, file in files.items():
        for directory in _FONT_DIRS:
            path = os.path.join(directory, file)
            if os.path.exists(path):
                found[name] = path
                break
    if len(found) != len(files):
        return _Fonts("Helvetica", "Helvetica-Bold", "Helvetica", "Helvetica-Bold", "Courier", euro=False)
    for name, path in found.items():
        pdfmetrics.registerFont(TTFont(name, path))
    return _Fonts("ChSans", "ChSans-Bold", "ChSansCond", "ChSansCond-Bold", "ChMono", euro=True)


class _Precompressed:
    """A stream 'filter' for content that was deflated already (see _StreamingDocument.addPage)."""

    pdfname = "FlateDecode"

    @staticmethod
    def encode(data: bytes) -> bytes:
        return data


_XREF_ENTRY = 20  # "0000012345 00000 n \n": every xref entry has this length (PDF 32000-1, 7.5.4)


class _StreamingDocument(pdfdoc.PDFDocument):
    """reportlab's document, but each page is written to the file as soon as it is finished.

    reportlab's PDFDocument numbers objects as they are registered and serializes them all in
    save(), so it holds every page until then. Here a page and the objects registered while
    it is serialized (its content stream) are written when the canvas adds the page, then
    forgotten. What pages share stays until the end: the fonts (their subsets are known only
    then), the forms (the texts known only at the end: page total, row counts), the page tree
    root, the catalog and the info. Object numbers are still reportlab's, so the file is in
    number order except for those; the xref table only maps numbers to offsets.

    Nothing that grows with the pages stays in memory: each object's xref entry is written at
    its slot in a temporary file, each page's reference to another, and both are copied into
    the PDF at the end (the page tree's /Kids and the xref table)."""

    def __init__(self, fp: BinaryIO, xref: BinaryIO, kids: BinaryIO, **kwargs: Any) -> None:
        """`xref` and `kids`: empty temporary files, the caller's to close."""
        super().__init__(**kwargs)
        self._fp = fp
        self._offset = 0
        self._objects_written = 0
        self._xref, self._kids = xref, kids
        self._page_count = 0
        self._next = 1  # the first object number not yet looked at
        self._held: list[int] = []  # numbers registered outside any page: written at the end
        self._header_version = self._pdfVersion
        # The page tree root is registered now, so that no page's serialization registers it
        # (it would then be written as the page's own object, with no kids).
        self._root_name = self.Reference(self.Pages).name
        self._emit(pdfdoc.PDFFile(self._pdfVersion).format(self))  # the header

    def _emit(self, data: bytes) -> None:
        self._fp.write(data)
        self._offset += len(data)

    def _emit_object(self, number: int, data: bytes) -> None:
        self._xref.seek((number - 1) * _XREF_ENTRY)
        self._xref.write(b"%010d 00000 n \n" % self._offset)
        self._objects_written += 1
        self._emit(data)

    def _write(self, number: int) -> None:
        name = self.numberToId[number]
        if name == self._root_name:
            self._write_page_tree(number)
        elif name not in self.idToObject:
            raise ValueError(f"{name} is used by a page but was never defined")
        else:
            self._emit_object(number, pdfdoc.PDFIndirectObject(name, self.idToObject[name]).format(self))

    def _write_page_tree(self, number: int) -> None:
        self._emit_object(number, b"%d 0 obj\n<<\n/Count %d /Kids [" % (number, self._page_count))
        self._kids.seek(0)
        while chunk := self._kids.read(1 << 16):
            self._emit(chunk)
        self._emit(b"] /Type /Pages\n>>\nendobj\n")

    def addPage(self, page: pdfdoc.PDFPage) -> None:  # reportlab's name
        # Deflated once here, as FlateDecode only (reportlab would add ASCII85 on top).
        if page.stream:
            data = page.stream.encode("utf8") if isinstance(page.stream, str) else page.stream
            stream = pdfdoc.PDFStream(content=zlib.compress(data), filters=[_Precompressed])
            page.Contents, page.stream = stream, None
        # A form a page uses may be defined only at the end (the page total): its number is
        # taken now, so that the page can refer to it.
        for name in page.XObjects.dict if page.XObjects else ():
            if name not in self.idToObjectNumberAndVersion:
                self.objectcounter += 1
                self.idToObjectNumberAndVersion[name] = (self.objectcounter, 0)
                self.numberToId[self.objectcounter] = name
        # reportlab's addPage, except that the page tree keeps no list of the pages.
        number = self.idToObjectNumberAndVersion[self.Reference(page, self.thisPageName()).name][0]
        self.pageCounter += 1
        self.inObject = None
        self._held.extend(range(self._next, number))
        self._kids.write(b"%d 0 R\n" % number)
        self._page_count += 1
        n = number
        while n <= self.objectcounter:  # the page, then what its serialization registered
            self._write(n)
            name = self.numberToId.pop(n)
            del self.idToObject[name], self.idToObjectNumberAndVersion[name]
            n += 1
        self._next = n

    def addForm(self, name: str, form: Any) -> None:  # reportlab's name
        internal = pdfdoc.xObjectName(name)
        if internal in self.idToObjectNumberAndVersion and internal not in self.idToObject:
            form.__InternalName__ = internal  # the number a page took for it
            self.idToObject[internal] = form
            self.inObject = None
        else:
            super().addForm(name, form)

    def SaveToFile(self, filename: Any, canvas: Canvas) -> None:  # reportlab's name
        """What reportlab's save() does, for what is left: fonts, forms, page tree, catalog,
        info; then the xref table and the trailer."""
        for font in self.delayedFonts:
            with _LOCK:  # subsetting reads the font file through the face's one shared cursor
                font.addObjects(self)
        self.info.invariant = self.invariant
        self.info.digest(self.signature)
        self.Reference(self.Catalog)
        self.Reference(self.info)
        self.Outlines.prepare(self, canvas)
        if self.Outlines.ready < 0:
            self.Catalog.Outlines = None
        if self._pdfVersion != self._header_version:
            raise ValueError(
                f"a feature needs PDF {self._pdfVersion}; the header says {self._header_version}"
            )
        for number in self._held:
            self._write(number)
        n = self._next
        while n <= self.objectcounter:  # serializing may register more (font files, widths)
            self._write(n)
            n += 1
        size = self.objectcounter + 1
        if self._objects_written != self.objectcounter:
            raise ValueError(f"{self.objectcounter} objects numbered, {self._objects_written} written")
        startxref = self._offset
        self._emit(b"xref\n0 %d\n0000000000 65535 f \n" % size)
        self._xref.seek(0)
        while chunk := self._xref.read(1 << 16):
            self._emit(chunk)
        trailer = pdfdoc.PDFTrailer(
            startxref=startxref,
            Size=size,
            Root=self.Reference(self.Catalog),
            Info=self.Reference(self.info),
            ID=self.ID(),
        )
        self._emit(trailer.format(self))


class _Canvas(Canvas):
    """A canvas on a _StreamingDocument writing to `fp` (spooling to `xref` and `kids`)."""

    def __init__(self, fp: BinaryIO, xref: BinaryIO, kids: BinaryIO, **kwargs: Any) -> None:
        super().__init__(fp, **kwargs)
        # PDF 1.4 from the start: the header is written before any page, and the colours'
        # alpha (transparency) needs 1.4, which reportlab would only raise the version to.
        self._doc = _StreamingDocument(
            fp,
            xref,
            kids,
            compression=self._pageCompression,
            invariant=kwargs.get("invariant"),
            filename=fp,
            pdfVersion=pdfdoc.PDF_SUPPORT_VERSION["transparency"],
        )
        self._make_preamble()  # its initial font, registered in this document


# -- Chinese, Japanese, Korean ------------------------------------------------------------
# The characters a CJK font draws, by script (Basic Multilingual Plane only: the CID fonts'
# UCS-2 encodings cannot address the supplementary ideographs, which stay boxes).
_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uffa0-\uffdc"
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HAN_AND_MARKS = (  # ideographs, radicals, bopomofo, CJK punctuation, fullwidth forms
    "\u2e80-\u2fdf\u3000-\u303f\u3100-\u312f\u3190-\u31ef\u3200-\u33ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff65\uffe0-\uffef"
)
_CJK = re.compile(f"[{_HANGUL}{_KANA}{_HAN_AND_MARKS}]")
_IS_HANGUL = re.compile(f"[{_HANGUL}]")
_IS_KANA = re.compile(f"[{_KANA}]")
# Sans faces where there is one, like DejaVu Sans; simplified Chinese has only a Song (serif)
# face, and its GBK coverage includes the traditional characters.
CJK_FONTS = {"zh": "STSong-Light", "ja": "HeiseiKakuGo-W5", "ko": "HYGothic-Medium"}


@_once
def _cjk_font(language: str) -> str:
    """The CID font of `language`, registered once per process (it costs no file: the PDF
    only names it)."""
    name = CJK_FONTS[language]
    pdfmetrics.registerFont(UnicodeCIDFont(name))
    return name


@_once
def _coverage(font: str) -> frozenset[int]:
    """The code points `font` has a glyph for: its cmap for a TrueType font; for a standard
    font (Helvetica) none that matters here, it has no CJK."""
    cmap = getattr(getattr(pdfmetrics.getFont(font), "face", None), "charToGlyph", None)
    return frozenset(cmap or ())


def _language(ch: str, text: str) -> str:
    """Which CJK font draws `ch`: Hangul is Korean, kana Japanese; ideographs and CJK
    punctuation are Japanese in a text with kana (a Japanese name's kanji), Korean marks
    in a text with Hangul, Chinese otherwise (also for a name all in kanji, which the
    Chinese font draws too)."""
    if _IS_HANGUL.match(ch):
        return "ko"
    if _IS_KANA.match(ch) or _IS_KANA.search(text):
        return "ja"
    if _IS_HANGUL.search(text) and not ("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"):
        return "ko"
    return "zh"


# -- Thai, Devanagari, Arabic, Hebrew ------------------------------------------------------
# Runs of these scripts are drawn in Noto Sans (fonts-noto-core), found like DejaVu, embedded
# as subsets; shaped with HarfBuzz (uharfbuzz: Arabic joining, Devanagari conjuncts and vowel
# reordering, Thai marks placed); a line with right-to-left text is put in visual order by the
# Unicode bidirectional algorithm (python-bidi) before it is split into runs. Without the Noto
# TTFs these characters stay in the base font, as before (DejaVu: Arabic and Hebrew unjoined,
# Thai and Devanagari boxes), still in visual order.
_NOTO_DIRS = (
    "/usr/share/fonts/truetype/noto",
    "/usr/share/fonts/noto",
    "/usr/share/fonts/google-noto",
    "/usr/share/fonts/TTF",
    "/usr/local/share/fonts",
)
# script: (its characters, the Noto family's file stem)
_SCRIPTS = {
    "thai": ("\u0e00-\u0e7f", "NotoSansThai"),
    "devanagari": ("\u0900-\u097f\ua8e0-\ua8ff", "NotoSansDevanagari"),
    "arabic": ("\u0600-\u06ff\u0750-\u077f\u0870-\u08ff\ufb50-\ufdff\ufe70-\ufeff", "NotoSansArabic"),
    "hebrew": ("\u0590-\u05ff\ufb1d-\ufb4f", "NotoSansHebrew"),
}
_SCRIPT_OF = [(script, re.compile(f"[{chars}]")) for script, (chars, _) in _SCRIPTS.items()]
_COMPLEX = re.compile(f"[{''.join(chars for chars, _ in _SCRIPTS.values())}]")
_JOINERS = "\u200c\u200d"  # zero-width (non-)joiner: shaping controls, kept in their script's run
# Strong right-to-left characters (Hebrew, Arabic, Syriac, Thaana, N'Ko..., their presentation
# forms) and the explicit RTL controls: a line with none of them needs no bidi pass.
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\u200f\u202b\u202e\u2067]")
_PUA = 0xE000  # a glyph with no character of its own (a conjunct, a joined form) is drawn as
# U+E000 + its glyph id: the same code in every document and process (reportlab's own shaping
# numbers them in the order met, which would make the bytes depend on what was drawn before).


@_once
def _script_fonts() -> dict[str, tuple[str, str]]:
    """Each script's (regular, bold) font, registered once per process, for the scripts whose
    Noto Sans TTFs are installed."""
    found: dict[str, tuple[str, str]] = {}
    for script, (_chars, stem) in _SCRIPTS.items():
        names = []
        for weight in ("Regular", "Bold"):
            path = next(
                (p for d in _NOTO_DIRS if os.path.exists(p := os.path.join(d, f"{stem}-{weight}.ttf"))), None
            )
            if path is None:
                break
            name = f"Ch{stem.removeprefix('NotoSans')}{'-Bold' if weight == 'Bold' else ''}"
            pdfmetrics.registerFont(TTFont(name, path))
            names.append(name)
        if len(names) == 2:
            found[script] = (names[0], names[1])
    return found


def _script_font(ch: str, font: str) -> str | None:
    """The Noto font that draws `ch` next to text in `font` (bold next to bold), if any."""
    fonts_ = _script_fonts()
    for script, pattern in _SCRIPT_OF:
        if pattern.match(ch):
            pair = fonts_.get(script)
            return None if pair is None else pair[1] if "Bold" in font else pair[0]
    return None


def _runs(text: str, font: str) -> list[tuple[str, str]]:
    """`text` as runs of (text, font): Thai, Devanagari, Arabic and Hebrew go to their Noto
    font (when installed); the characters `font` has no glyph for that a CJK font draws go to
    that font; the rest (Latin, digits, spaces between) stay in `font`."""
    if text.isascii() or not (_CJK.search(text) or _COMPLEX.search(text)):
        return [(text, font)]
    have = _coverage(font)
    scripts = set(_script_fonts().values())
    runs: list[list[str]] = []
    for ch in text:
        name = _script_font(ch, font)
        if name is None:
            if ch in _JOINERS and runs and any(runs[-1][1] in pair for pair in scripts):
                name = runs[-1][1]
            elif ord(ch) in have or not _CJK.match(ch):
                name = font
            else:
                name = _cjk_font(_language(ch, text))
        if runs and runs[-1][1] == name:
            runs[-1][0] += ch
        else:
            runs.append([ch, name])
    return [(run, name) for run, name in runs]


def _levels(text: str) -> list[int]:
    """The bidi embedding level of each character of `text` (rules up to I2 of UAX #9, by
    python-bidi), odd for right to left. python-bidi gives its levels (per UTF-8 byte) only
    in its debug output, which is parsed here; should that ever fail, a plain rule stands in:
    strong right-to-left characters at 1, everything else at 0."""
    out = get_display(text, debug=True)
    _, sep, tail = out.partition("\n    levels: [\n")
    levels_per_byte = [int(n) for n in re.findall(r"Level\(\s*(\d+),?\s*\)", tail.partition("\n    ],\n")[0])]
    offsets = list(itertools.accumulate((len(ch.encode()) for ch in text), initial=0))[:-1]
    if not sep or len(levels_per_byte) != len(text.encode()):
        return [1 if unicodedata.bidirectional(ch) in ("R", "AL") else 0 for ch in text]
    return [levels_per_byte[i] for i in offsets]


def _visual(text: str) -> list[tuple[str, int]]:
    """`text` (one line, in logical order) as its characters in visual order, each with its
    level: rules L1 (trailing white space at the paragraph's level), L2 (reversals) and L4
    (a mirrored character, a bracket, at an odd level drawn as its mirror image)."""
    levels = _levels(text)
    base = get_base_level(text)
    i = len(text)
    while i and unicodedata.bidirectional(text[i - 1]) in ("WS", "S", "B", "BN", "LRI", "RLI", "FSI", "PDI"):
        i -= 1
        levels[i] = base
    order = list(range(len(text)))
    odd = [lv for lv in levels if lv % 2]
    for level in range(max(levels, default=0), min(odd, default=1) - 1, -1):
        i = 0
        while i < len(order):
            if levels[order[i]] >= level:
                j = i
                while j < len(order) and levels[order[j]] >= level:
                    j += 1
                order[i:j] = order[i:j][::-1]
                i = j
            else:
                i += 1
    mirror = [bool(levels[k] % 2 and unicodedata.mirrored(text[k])) for k in range(len(text))]
    return [(MIRRORED.get(text[k], text[k]) if mirror[k] else text[k], levels[k]) for k in order]


@_once
def _hb_font(name: str) -> uharfbuzz.Font:
    """A HarfBuzz font on the TTF `name` was registered from (its scale: font units)."""
    return uharfbuzz.Font(uharfbuzz.Face(uharfbuzz.Blob(pdfmetrics.getFont(name).face._ttf_data)))


# Caches, as a line is measured many times (wrapping, column sizes) then drawn: bounded in
# count, and only short strings kept, so that memory stays bounded whatever the day's text.
_CACHED_LINE, _CACHED_RUN = 200, 64  # characters


def _shaped(run: str, name: str, rtl: bool) -> tuple[str, float]:
    return _shaped_cached(run, name, rtl) if len(run) <= _CACHED_RUN else _shape(run, name, rtl)


def _shape(run: str, name: str, rtl: bool) -> tuple[str, float]:
    """`run` (in visual order) shaped in the TTF `name`: the string reportlab draws (a
    ShapedStr: a character for each glyph, with HarfBuzz's advances and offsets) and its
    width at size 1. A right-to-left run is given to HarfBuzz in logical order (reversed
    back), which returns its glyphs in visual order."""
    font = pdfmetrics.getFont(name)
    face, hb_font = font.face, _hb_font(name)
    buf = uharfbuzz.Buffer()
    buf.add_str(run[::-1] if rtl else run)
    buf.guess_segment_properties()
    buf.direction = "rtl" if rtl else "ltr"
    uharfbuzz.shape(hb_font, buf, {"kern": True, "liga": True})
    chars: list[str] = []
    data: list[ShapeData] = []
    advance = 0.0
    for info, pos in zip(buf.glyph_infos, buf.glyph_positions, strict=True):
        gid = info.codepoint
        code = next((c for c in face.glyphToChar.get(gid, ()) if face.charToGlyph.get(c) == gid), None)
        if code is None:
            code = _PUA + gid
            with _LOCK:
                if face.charToGlyph.get(code, gid) != gid:  # the font maps that code itself (never seen)
                    code = ord(" ")
                elif code not in face.charToGlyph:  # (another thread may have given it meanwhile)
                    face.charWidths[code] = face._pdfScale(hb_font.get_glyph_h_advance(gid))
                    face.glyphToChar.setdefault(gid, []).append(code)
                    face.charToGlyph[code] = gid
        x_advance = face._pdfScale(pos.x_advance)
        data.append(
            ShapeData(
                info.cluster,
                x_advance,
                face._pdfScale(pos.y_advance),
                face._pdfScale(pos.x_offset),
                face._pdfScale(pos.y_offset),
                face.charWidths[code],
            )
        )
        chars.append(chr(code))
        advance += x_advance
    return ShapedStr("".join(chars), shapeData=data), advance / 1000


def _line(text: str, font: str) -> tuple[tuple[tuple[str, str, float], ...], float]:
    return _line_cached(text, font) if len(text) <= _CACHED_LINE else _lay_out(text, font)


def _lay_out(text: str, font: str) -> tuple[tuple[tuple[str, str, float], ...], float]:
    """`text`, one line, as drawn: runs of (string, font, width at size 1) from left to right,
    and the whole width at size 1. In visual order when it has right-to-left text; the runs
    in a Noto font shaped (see _shaped)."""
    if _RTL.search(text):
        visual = _visual(text)
        chars = "".join(ch for ch, _ in visual)
        pieces: list[tuple[str, str, bool]] = []
        i = 0
        for run, name in _runs(chars, font):  # a run in one font and one direction
            for rtl, group in itertools.groupby(visual[i : i + len(run)], key=lambda cl: cl[1] % 2 == 1):
                pieces.append(("".join(ch for ch, _ in group), name, rtl))
            i += len(run)
    else:
        pieces = [(run, name, False) for run, name in _runs(text, font)]
    scripts = {name for pair in _script_fonts().values() for name in pair}
    out: list[tuple[str, str, float]] = []
    for run, name, rtl in pieces:
        if name in scripts:
            shaped, width = _shaped(run, name, rtl)
            out.append((shaped, name, width))
        else:
            out.append((run, name, pdfmetrics.stringWidth(run, name, 1.0)))
    return tuple(out), sum(width for _, _, width in out)


_shaped_cached = lru_cache(maxsize=2048)(_shape)
_line_cached = lru_cache(maxsize=512)(_lay_out)


def _width(text: str, font: str, size: float) -> float:
    """The width of `text` as _Writer._text draws it: each run in its own font, shaped."""
    if text.isascii() or not (_CJK.search(text) or _COMPLEX.search(text) or _RTL.search(text)):
        return pdfmetrics.stringWidth(text, font, size)
    return _line(text, font)[1] * size


def _label_font(text: str, font: str) -> str:
    """One font for a whole chart label (a reportlab String has one): the CJK font when the
    label needs one (its Latin glyphs are proportional), else `font`."""
    return next((name for _, name in _runs(text, font) if name != font), font)


def _cut(text: str, font: str, size: float, width: float) -> str:
    """`text` cut to `width`, ending in "…" when cut."""
    if _width(text, font, size) <= width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits with the ellipsis
        mid = (lo + hi + 1) // 2
        if _width(text[:mid].rstrip() + "…", font, size) <= width:
            lo = mid
        else:
            hi = mid - 1
    while 0 < lo < len(text) and _mid_cluster(text, lo):
        lo -= 1
    return text[:lo].rstrip() + "…"


def _mid_cluster(text: str, i: int) -> bool:
    """Whether a cut before text[i] would split a cluster: a mark from its base (a Thai vowel
    or tone, a Devanagari vowel sign, an Arabic harakat), a conjunct after its virama."""
    return unicodedata.category(text[i])[0] == "M" or text[i - 1] in "\u094d\u200c\u200d"


def wrap(text: str, font: str, size: float, width: float, max_lines: int) -> list[str]:
    """Greedy word wrap to `width`, breaking words longer than a line, at most `max_lines`
    lines, the last one ending in "…" if text was left over."""
    if "\n" not in text and _width(text, font, size) <= width:
        return [text]
    lines: list[str] = []
    words = [w for para in text.split("\n") for w in ([*para.split(), "\n"])][:-1]
    current = ""
    overflow = False
    for word in words:
        if word == "\n":
            lines.append(current)
            current = ""
        else:
            candidate = f"{current} {word}" if current else word
            if _width(candidate, font, size) <= width:
                current = candidate
            else:
                if current:
                    lines.append(current)
                current = word
                while _width(current, font, size) > width and len(lines) < max_lines:
                    # a word longer than the line (a hash, an id): break it where it fills
                    head = _cut(current, font, size, width)[:-1] or current[:1]
                    soft = max(
                        head.rfind(mark) for mark in "_-/"
                    )  # "nobody_|accepted", not "nobody_acc|epted"
                    if 0 < soft < len(head) - 1:
                        head = head[: soft + 1]
                    lines.append(head)
                    current = current[len(head) :]
        if len(lines) >= max_lines:
            overflow = True
            break
    if not overflow:
        lines.append(current)
    if len(lines) > max_lines or overflow:
        lines = lines[:max_lines]
        lines[-1] = _cut(lines[-1] + " …", font, size, width) if not lines[-1].endswith("…") else lines[-1]
    return lines or [""]


@dataclass
class _Table:
    columns: list[Column]
    widths: list[float]
    titles: list[list[str]]
    header_h: float
    size: float = BODY_SIZE  # the type size of this table's body and titles
    leading: float = BODY_LEADING


def _measure(
    cols: list[Column], titles: list[str], f: _Fonts, sample: Sequence[Sequence[str]], size: float
) -> tuple[list[float], list[float]]:
    """Each column's width at type size `size`: what it would like (numbers and moments with
    room to spare, text on one line of up to 320pt at the standard size, the title on three
    lines) and what it needs (a figure whole on one line, the title within MAX_HEADER_LINES,
    text 50pt at the standard size, where it wraps)."""
    scale = size / BODY_SIZE
    floor = {"int": 34.0, "money": 56.0, "datetime": 86.0, "bool": 30.0}
    wants: list[float] = []
    needs: list[float] = []
    for i, (c, title) in enumerate(zip(cols, titles, strict=True)):
        longest_word = max((_width(w, f.cond_bold, size) for w in title.split()), default=0)
        title_w = _width(title, f.cond_bold, size)
        header = min(max(longest_word, title_w / 3 * 1.15), 140.0 * scale)
        header_need = max(longest_word, title_w / MAX_HEADER_LINES * 1.25)
        content = max((_width(row[i], f.cond, size) for row in sample), default=0.0)
        if c.kind == "text":
            want = max(60.0 * scale, header, min(content, 320.0 * scale))
            need = max(50.0 * scale, longest_word)
        elif c.kind == "datetime":  # the date and the time may go on two lines
            want = max(floor["datetime"] * scale, header, content * 1.15)
            halves = max(
                (_width(part, f.cond, size) for row in sample for part in row[i].split()), default=0.0
            )
            need = max(header_need, halves * 1.15, 40.0 * scale)
        else:
            want = max(floor.get(c.kind, 60.0) * scale, header, content * 1.15)
            need = max(header_need, content * 1.15, 24.0 * scale)
        wants.append(want + 2 * CELL_PAD)
        needs.append(min(need, want) + 2 * CELL_PAD)
    return wants, needs


def _layout(columns: Sequence[Column], f: _Fonts, sample: Sequence[Sequence[str]] = ()) -> _Table:
    """Column widths from the kinds, the titles and the first rows' text (`sample`, already
    formatted), spanning the page. In order, as room runs short: every column gets what it
    would like; the text columns give way (the widest first, down to one common width; their
    text wraps); the figures lose their spare room and the titles take more lines; the whole
    table is set in a smaller type, down to MIN_BODY_SIZE. An amount in an audited report is
    never shortened: past the smallest size, a figure wraps."""
    cols = list(columns)
    euro = "€" if f.euro else "EUR"
    titles = [f"{c.title} ({euro})" if c.kind == "money" else c.title for c in cols]
    size = BODY_SIZE
    wants, needs = _measure(cols, titles, f, sample, size)
    if sum(needs) > CONTENT_W:  # the largest size at which every column gets what it needs
        lo, hi = MIN_BODY_SIZE, BODY_SIZE
        if sum(_measure(cols, titles, f, sample, lo)[1]) <= CONTENT_W:
            for _step in range(20):
                mid = (lo + hi) / 2
                lo, hi = (
                    (mid, hi) if sum(_measure(cols, titles, f, sample, mid)[1]) <= CONTENT_W else (lo, mid)
                )
        size = math.floor(lo * 10) / 10
        wants, needs = _measure(cols, titles, f, sample, size)
    text = [i for i, c in enumerate(cols) if c.kind == "text"]
    other = [i for i in range(len(cols)) if i not in text]
    widths = list(wants)
    fixed = sum(wants[i] for i in other)
    if not cols:
        pass
    elif sum(wants) <= CONTENT_W:
        # The spare room goes to the text column that wants the most (the notes, usually),
        # so short labels keep their columns narrow and the table still spans the page.
        flex = text or other
        widest = max(reversed(flex), key=lambda i: wants[i])
        widths[widest] += CONTENT_W - sum(wants)
    elif text and fixed + sum(needs[i] for i in text) <= CONTENT_W:
        # The widest text columns give way first (all cut to one common width, found by
        # bisection), so short labels stay whole; their text wraps.
        room = CONTENT_W - fixed
        lo, hi = min(needs[i] for i in text), max(wants[i] for i in text)
        for _step in range(40):
            mid = (lo + hi) / 2
            if sum(min(wants[i], max(needs[i], mid)) for i in text) > room:
                hi = mid
            else:
                lo = mid
        for i in text:
            widths[i] = min(wants[i], max(needs[i], lo))
        widest = max(reversed(text), key=lambda i: widths[i])
        widths[widest] += CONTENT_W - sum(widths)
    elif sum(needs) <= CONTENT_W:
        # Everything at what it needs, the room left shared in proportion to what each
        # column would have liked more.
        spare = CONTENT_W - sum(needs)
        extra = sum(w - n for w, n in zip(wants, needs, strict=True)) or 1.0
        widths = [n + spare * (w - n) / extra for w, n in zip(wants, needs, strict=True)]
    else:  # too many columns even at the smallest size: everything shrinks, figures wrap
        widths = [n * CONTENT_W / sum(needs) for n in needs]
    leading = size * BODY_LEADING / BODY_SIZE
    wrapped = [
        wrap(t, f.cond_bold, size, w - 2 * CELL_PAD, MAX_HEADER_LINES)
        for t, w in zip(titles, widths, strict=True)
    ]
    lines = max((len(t) for t in wrapped), default=1)
    return _Table(cols, widths, wrapped, lines * leading + 2 * CELL_PAD, size, leading)


def single_line_rows_per_page(columns: Sequence[Column], sample: Sequence[Sequence[str]] = ()) -> int:
    """How many one-line rows fit on a page of a section (the first page of a section that
    starts a page and has no note, or any continuation page)."""
    table = _layout(columns, fonts(), sample)
    room = CONTENT_TOP - CONTENT_BOTTOM - HEADING_H - table.header_h
    return int(room // (table.leading + 2 * CELL_PAD))


def _seal(doc: ReportDocument) -> str:
    for key, value in doc.facts:
        if "seal" in key.casefold() or "sigillo" in key.casefold():
            return fact_text(value)
    return ""


class _Writer:
    def __init__(
        self,
        doc: ReportDocument,
        fp: BinaryIO,
        created: dt.datetime | None,
        tz: dt.tzinfo | None,
        spool: tuple[BinaryIO, BinaryIO],
    ):
        self.doc, self.tz, self.f = doc, tz, fonts()
        self.created = created or doc.created
        stamp = created_of(self.created)
        offset = stamp.utcoffset() or dt.timedelta(0)
        minutes = int(offset.total_seconds()) // 60
        hours, mins = divmod(abs(minutes), 60)
        pdf_date = f"D:{stamp.strftime('%Y%m%d%H%M%S')}{'-' if minutes < 0 else '+'}{hours:02d}'{mins:02d}'"
        self.c = _Canvas(fp, *spool, pagesize=(PAGE_W, PAGE_H), invariant=1, pageCompression=1)
        self.c.setDateFormatter(lambda *_: pdf_date)
        self.c.setTitle(self._s(doc.title))
        self.c.setSubject(self._s(doc.subtitle))
        self.c.setAuthor("Chemin")
        self.c.setCreator("Chemin")
        self.c.setProducer("Chemin (ReportLab)")
        self.seal = _seal(doc)
        self.page = 0
        self.y = CONTENT_TOP
        self.toc: list[tuple[str, str, str]] = []  # (label, rows form, page form)
        self.forms: dict[str, str] = {}

    # -- text helpers ---------------------------------------------------------------
    def _s(self, text: object) -> str:
        text = _CONTROL.sub(" ", str(text)).replace("\t", " ")
        return text if self.f.euro else text.replace("€", "EUR")

    def _text(
        self, x: float, y: float, text: str, font: str, size: float, color: Any = INK, align: str = "left"
    ) -> None:
        c = self.c
        if c._fillColorObj is not color:  # the canvas's current fill (it follows save/restore)
            c.setFillColor(color)
        if text.isascii() or not (_CJK.search(text) or _COMPLEX.search(text) or _RTL.search(text)):
            c.setFont(font, size)
            if align == "right":
                c.drawRightString(x, y, text)
            elif align == "center":
                c.drawCentredString(x, y, text)
            else:
                c.drawString(x, y, text)
            return
        # A line in several fonts (a CJK or Arabic name among Latin text), or shaped, or right
        # to left: drawn run after run from the left, the alignment taken from the whole
        # line's width.
        runs, width = _line(text, font)
        if align == "right":
            x -= width * size
        elif align == "center":
            x -= width * size / 2
        for run, name, run_width in runs:
            c.setFont(name, size)
            c.drawString(x, y, run)
            x += run_width * size

    def _later(self, name: str, x: float, y: float) -> None:
        """Place a form (text known only at the end: page total, row counts)."""
        self.c.saveState()
        self.c.translate(x, y)
        self.c.doForm(name)
        self.c.restoreState()

    # -- pages ----------------------------------------------------------------------
    def new_page(self) -> None:
        if self.page:
            self.c.showPage()
        self.page += 1
        self._frame()
        self.y = CONTENT_TOP

    def _frame(self) -> None:
        c, f = self.c, self.f
        top = PAGE_H - 30
        self._text(MARGIN, top, _cut(self._s(self.doc.title), f.bold, 9, CONTENT_W * 0.55), f.bold, 9, NAVY)
        if self.doc.subtitle:
            self._text(
                PAGE_W - MARGIN,
                top,
                _cut(self._s(self.doc.subtitle), f.regular, 8, CONTENT_W * 0.43),
                f.regular,
                8,
                MUTED,
                "right",
            )
        c.setStrokeColor(NAVY)
        c.setLineWidth(0.8)
        c.line(MARGIN, top - 7, PAGE_W - MARGIN, top - 7)
        c.setStrokeColor(RULE)
        c.setLineWidth(0.5)
        c.line(MARGIN, 34, PAGE_W - MARGIN, 34)
        left = MARGIN
        if self.seal:
            label = _("Audit seal") + " "
            self._text(left, 22, label, f.regular, 7, MUTED)
            self._text(left + _width(label, f.regular, 7), 22, self._s(self.seal), f.mono, 7, INK)
        elif self.created:
            as_of = _("As of %(moment)s") % {"moment": datetime_display(self.created, self.tz)}
            self._text(left, 22, as_of, f.regular, 7, MUTED)
        # "Page 3 of " here, the total in a form filled in at the end.
        label = _("Page %(page)s of ") % {"page": self.page}
        x = PAGE_W - MARGIN - _width(_("Page %(page)s of ") % {"page": "00000"} + "00000", f.regular, 7)
        self._text(x, 22, label, f.regular, 7, MUTED)
        self._later("pagetotal", x + _width(label, f.regular, 7), 22)

    def room(self) -> float:
        return self.y - CONTENT_BOTTOM

    # -- cover ------------------------------------------------------------------------
    def cover(self) -> None:
        f, doc = self.f, self.doc
        self.new_page()
        for line in wrap(self._s(doc.title), f.bold, 20, CONTENT_W, 2):
            self.y -= 24
            self._text(MARGIN, self.y, line, f.bold, 20, NAVY)
        if doc.subtitle:
            for line in wrap(self._s(doc.subtitle), f.regular, 12, CONTENT_W, 2):
                self.y -= 17
                self._text(MARGIN, self.y, line, f.regular, 12, MUTED)
        self.y -= 14
        if doc.facts:
            self._cover_heading(_("Facts"))
            key_w = min(220.0, max(_width(self._s(k), f.bold, 9) for k, _value in doc.facts) + 16)
            for key, value in doc.facts:
                lines = wrap(self._s(fact_text(value)), f.regular, 9, CONTENT_W - key_w - 8, 6)
                keys = wrap(self._s(key), f.bold, 9, key_w - 8, 3)  # a long label wraps too
                height = 12 * max(len(lines), len(keys)) + 5
                if self.room() < height:
                    self.new_page()
                for i, line in enumerate(keys):
                    self._text(MARGIN, self.y - 11 - 12 * i, line, f.bold, 9)
                for i, line in enumerate(lines):
                    self._text(MARGIN + key_w, self.y - 11 - 12 * i, line, f.regular, 9)
                self.y -= height
                self.c.setStrokeColor(RULE)
                self.c.setLineWidth(0.3)
                self.c.line(MARGIN, self.y + 1, PAGE_W - MARGIN, self.y + 1)
            self.y -= 16
        if doc.sections or doc.charts:
            self._cover_heading(_("Contents"))
            self._text(PAGE_W - MARGIN - 170, self.y - 10, _("Rows"), f.bold, 8, MUTED, "right")
            self._text(PAGE_W - MARGIN, self.y - 10, pgettext("report contents", "Page"), f.bold, 8, MUTED, "right")
            self.y -= 14
            entries = [(s.title, f"rows{i}", f"page{i}") for i, s in enumerate(doc.sections)]
            if doc.charts:
                entries.append((_("Charts"), "", "pagecharts"))
            for title, rows_form, page_form in entries:
                if self.room() < 14:
                    self.new_page()
                self.y -= 13
                self._text(MARGIN, self.y, _cut(self._s(title), f.regular, 9, CONTENT_W - 220), f.regular, 9)
                if rows_form:
                    self._later(rows_form, PAGE_W - MARGIN - 170, self.y)
                self._later(page_form, PAGE_W - MARGIN, self.y)

    def _cover_heading(self, text: str) -> None:
        if self.room() < 40:
            self.new_page()
        self.y -= 14
        self._text(MARGIN, self.y, text, self.f.bold, 11, NAVY)
        self.y -= 6

    # -- sections ---------------------------------------------------------------------
    def _heading(self, section: Section, continued: bool) -> None:
        f = self.f
        title = self._s(section.title) + (" " + _("(continued)") if continued else "")
        self._text(MARGIN, self.y - 14, _cut(title, f.bold, 11, CONTENT_W), f.bold, 11, NAVY)
        self.y -= HEADING_H

    def _header_row(self, table: _Table) -> None:
        c, f = self.c, self.f
        c.setFillColor(NAVY)
        c.rect(MARGIN, self.y - table.header_h, sum(table.widths), table.header_h, stroke=0, fill=1)
        x = MARGIN
        for column, width, lines in zip(table.columns, table.widths, table.titles, strict=True):
            for i, line in enumerate(lines):
                baseline = self.y - CELL_PAD - table.size - i * table.leading + 0.5
                if column.kind == "text":
                    self._text(x + CELL_PAD, baseline, line, f.cond_bold, table.size, colors.white)
                else:
                    self._text(
                        x + width - CELL_PAD, baseline, line, f.cond_bold, table.size, colors.white, "right"
                    )
            x += width
        self.y -= table.header_h

    def _bottom_rule(self, table: _Table) -> None:
        self.c.setStrokeColor(NAVY)
        self.c.setLineWidth(0.6)
        self.c.line(MARGIN, self.y, MARGIN + sum(table.widths), self.y)

    def section(self, index: int, section: Section) -> None:
        f = self.f
        columns = list(section.columns)
        rows = iter(section.rows())
        # The first rows, formatted, decide the column widths; then they are drawn first.
        head = [self._formatted(section, columns, row) for row in itertools.islice(rows, LAYOUT_SAMPLE)]
        table = _layout(columns, f, head)
        row_h1 = table.leading + 2 * CELL_PAD
        note = wrap(self._s(section.note), f.regular, 8, CONTENT_W, MAX_NOTE_LINES) if section.note else []
        need = HEADING_H + 11 * len(note) + table.header_h + 3 * row_h1
        if index == 0 or self.room() < need + SECTION_GAP:
            self.new_page()
        else:
            self.y -= SECTION_GAP
        self.forms[f"page{index}"] = str(self.page)
        self._heading(section, continued=False)
        for line in note:
            self._text(MARGIN, self.y - 8, line, f.regular, 8, MUTED)
            self.y -= 11
        if note:
            self.y -= 3
        self._header_row(table)

        count = 0
        rest = (self._formatted(section, columns, row) for row in rows)
        for texts in itertools.chain(head, rest):
            cells = []
            lines = 1
            for column, col_w, text in zip(table.columns, table.widths, texts, strict=True):
                inner = col_w - 2 * CELL_PAD
                if column.kind == "text":
                    wrapped = wrap(text, f.cond, table.size, inner, MAX_TEXT_LINES)
                elif column.kind == "datetime":
                    wrapped = wrap(text, f.cond, table.size, inner, MAX_DATETIME_LINES)
                else:  # a figure is never shortened: wrapped, in the last resort
                    wrapped = wrap(text, f.cond, table.size, inner, MAX_FIGURE_LINES)
                cells.append(wrapped)
                lines = max(lines, len(wrapped))
            height = lines * table.leading + 2 * CELL_PAD
            if self.room() < height:
                self._bottom_rule(table)
                self.new_page()
                self._heading(section, continued=True)
                self._header_row(table)
            self._row(table, cells, height, zebra=count % 2 == 1)
            count += 1
        if count == 0:
            if self.room() < row_h1:
                self.new_page()
                self._heading(section, continued=True)
                self._header_row(table)
            self._text(
                MARGIN + CELL_PAD, self.y - CELL_PAD - BODY_SIZE, _("No rows."), f.regular, BODY_SIZE, MUTED
            )
            self.y -= row_h1
        self._bottom_rule(table)
        self.forms[f"rows{index}"] = number_display(count)

    def _formatted(self, section: Section, columns: list[Column], row: Sequence[Any]) -> list[str]:
        if len(row) != len(columns):
            raise ValueError(
                f"section {section.key!r}: a row has {len(row)} cells for {len(columns)} columns"
            )
        return [self._s(display_cell(c, c.shown(v), self.tz)) for c, v in zip(columns, row, strict=True)]

    def _row(self, table: _Table, cells: list[list[str]], height: float, zebra: bool) -> None:
        c, f = self.c, self.f
        if zebra:
            c.setFillColor(ZEBRA)
            c.rect(MARGIN, self.y - height, sum(table.widths), height, stroke=0, fill=1)
        x = MARGIN
        for column, width, lines in zip(table.columns, table.widths, cells, strict=True):
            for i, line in enumerate(lines):
                if not line:
                    continue
                baseline = self.y - CELL_PAD - table.size - i * table.leading + 0.5
                if column.kind == "text":
                    self._text(x + CELL_PAD, baseline, line, f.cond, table.size)
                elif column.kind == "bool":
                    self._text(x + width / 2, baseline, line, f.cond, table.size, align="center")
                else:
                    self._text(x + width - CELL_PAD, baseline, line, f.cond, table.size, align="right")
            x += width
        self.y -= height

    # -- charts -----------------------------------------------------------------------
    def charts(self) -> None:
        slot = (CONTENT_TOP - CONTENT_BOTTOM) / 2
        for i, chart in enumerate(self.doc.charts):
            if i % 2 == 0:
                self.new_page()
                if i == 0:
                    self.forms["pagecharts"] = str(self.page)
            top = CONTENT_TOP - (i % 2) * slot
            self._chart(chart, top, slot - 10)

    def _chart(self, chart: Chart, top: float, height: float) -> None:
        f = self.f
        money = chart.unit == "cents"
        unit = ("€" if f.euro else "EUR") if money else pgettext("chart unit", "count")
        self._text(MARGIN, top - 14, f"{self._s(chart.title)} ({unit})", f.bold, 11, NAVY)
        if money and chart.values:
            total = money_display(sum(chart.values))
            self._text(
                PAGE_W - MARGIN, top - 14, self._s(_("Total %(total)s") % {"total": f"{total} {unit}"}), f.regular, 8,
                MUTED, "right",
            )
        elif chart.values:
            self._text(
                PAGE_W - MARGIN, top - 14, _("Total %(total)s") % {"total": number_display(sum(chart.values))},
                f.regular, 8, MUTED, "right",
            )
        box_h = height - 22
        drawing = Drawing(CONTENT_W, box_h)
        if not chart.labels:
            drawing.add(
                String(
                    CONTENT_W / 2,
                    box_h / 2,
                    _("No data."),
                    fontName=f.regular,
                    fontSize=9,
                    fillColor=MUTED,
                    textAnchor="middle",
                )
            )
            renderPDF.draw(drawing, self.c, MARGIN, top - 22 - box_h)
            return
        names = [_cut(self._s(label), f.cond, 7, 90) for label in chart.labels]
        label_fonts = [_label_font(name, f.cond) for name in names]
        plot_w = CONTENT_W - 72
        longest = max(_width(name, font, 7) for name, font in zip(names, label_fonts, strict=True))
        # Labels wider than their bar's slot are turned 40 degrees; the plot then rises by
        # what they need below it, so they never run into the footer.
        many = longest > plot_w / len(names) - 6
        bc = VerticalBarChart()
        bc.x, bc.y = 62, (14 + longest * math.sin(math.radians(40)) if many else 26)
        bc.width, bc.height = plot_w, box_h - bc.y - 8
        values = [int(v) for v in chart.values]
        bc.data = [values]
        bc.strokeColor = None
        bc.bars[0].fillColor = NAVY
        bc.bars[0].strokeColor = None
        bc.barSpacing = 2
        bc.groupSpacing = 6
        low, high = min(0, *values), max(0, *values)
        bc.valueAxis.valueMin = low
        if high == low:
            bc.valueAxis.valueMax = low + (100 if money else 1)
        else:
            bc.valueAxis.valueMax = high + (high - low) * 0.12  # room for the labels on the bars
        bc.valueAxis.labels.fontName = f.regular
        bc.valueAxis.labels.fontSize = 7
        bc.valueAxis.labels.fillColor = MUTED
        bc.valueAxis.strokeColor = RULE
        bc.valueAxis.visibleGrid = True
        bc.valueAxis.gridStrokeColor = colors.HexColor("#DDE3EA")
        bc.valueAxis.gridStrokeWidth = 0.4
        bc.valueAxis.labelTextFormat = _axis_format(money)
        bc.categoryAxis.categoryNames = names
        bc.categoryAxis.labels.fontName = f.cond
        for i, font in enumerate(label_fonts):
            if font != f.cond:
                bc.categoryAxis.labels[i].fontName = font
        bc.categoryAxis.labels.fontSize = 7
        bc.categoryAxis.labels.fillColor = INK
        bc.categoryAxis.strokeColor = RULE
        if many:
            bc.categoryAxis.labels.angle = 40
            bc.categoryAxis.labels.boxAnchor = "ne"
            bc.categoryAxis.labels.dx = 2
            bc.categoryAxis.labels.dy = -2
        else:
            bc.categoryAxis.labels.boxAnchor = "n"
            bc.categoryAxis.labels.dy = -3
        bc.barLabelFormat = lambda v, unit=chart.unit: chart_value_display(int(v), unit)
        bc.barLabels.fontName = f.cond
        bc.barLabels.fontSize = 6.5 if len(values) <= 24 else 5
        bc.barLabels.fillColor = INK
        bc.barLabels.nudge = 6
        drawing.add(bc)
        renderPDF.draw(drawing, self.c, MARGIN, top - 22 - box_h)

    # -- the end ----------------------------------------------------------------------
    def finish(self) -> None:
        self.c.showPage()
        f = self.f
        self.forms["pagetotal"] = str(self.page)
        for name, text in sorted(self.forms.items()):
            # A form's box must hold what it draws: right-aligned text lies left of 0.
            self.c.beginForm(name, lowerx=-200, lowery=-5, upperx=200, uppery=20)
            if name == "pagetotal":
                self._text(0, 0, text, f.regular, 7, MUTED)
            else:
                self._text(0, 0, text, f.regular, 9, INK, "right")
            self.c.endForm()
        self.c.save()


def _axis_format(money: bool):
    def fmt(value: float) -> str:
        # Tick positions are geometry, not money: shown rounded, whole euros when whole.
        n = round(value)
        if not money:
            return number_display(n)
        return number_display(n // 100) if n % 100 == 0 else money_display(n)

    return fmt


def write_pdf(
    doc: ReportDocument, fp: BinaryIO, *, created: dt.datetime | None = None, tz: dt.tzinfo | None = None
) -> None:
    """Write `doc` to the binary file `fp` (left open). Each section's rows are consumed once."""
    # Two temporary files hold what grows with the pages (see _StreamingDocument).
    # In the document's language: the words the writer adds, and the rows' (made as they are read).
    with tempfile.TemporaryFile() as xref, tempfile.TemporaryFile() as kids, in_language(doc.language):
        writer = _Writer(doc, fp, created, tz, (xref, kids))
        writer.cover()
        for index, section in enumerate(doc.sections):
            writer.section(index, section)
        writer.charts()
        writer.finish()
