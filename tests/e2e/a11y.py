"""Touch and accessibility checks run in the page (Playwright): what a croupier's thumb, a
screen reader and a low-vision reader meet on the screens. `audit(page)` returns the
problems as sentences, [] when there are none.

- every visible actionable control (link, button, input, select, summary, a card key, an
  SVG seat link) is at least 44x44 CSS px (WCAG 2.5.5, Apple HIG), and apart from its
  neighbours (TOUCH_GAP px between two boxes, none overlapping);
- a button, a card key or a tool's summary answers a tap at once (touch-action:
  manipulation: no double-tap zoom);
- it has an accessible name with a letter or a digit in it (not only a symbol, "♠"); every
  field has a label;
- nothing overflows the width of the viewport;
- the headings start at h1 and never skip a level going down;
- the text's contrast with its background is at least 4.5:1 (3:1 for large text).

Links inside running text (a sentence with a link in it) are exempt from the size, as WCAG
2.5.5 exempts them; so is the "skip to content" link, off screen until focused. The seats of
the floor's table drawing (SVG links) are measured by their boxes like any other target."""

from __future__ import annotations

MIN_TARGET = 44
TOUCH_GAP = 8

AUDIT_JS = r"""
([MIN, GAP]) => {
  const problems = [];
  const visible = (el) => {
    // shown (not in a closed <details>, not display:none), anywhere on the page but off it
    // to the left (where the skip link waits)
    if (!el.getClientRects().length || !el.checkVisibility({ visibilityProperty: true })) return false;
    const r = el.getBoundingClientRect();
    return r.right + scrollX > 0 && r.width > 0 && r.height > 0;
  };
  const hiddenFromAT = (el) => !!el.closest('[aria-hidden=true], [hidden]');
  const describe = (el) => {
    const tag = el.tagName.toLowerCase();
    const id = el.id ? '#' + el.id : '';
    const cls = el.getAttribute('class') ? '.' + el.getAttribute('class').trim().split(/\s+/).join('.') : '';
    const text = (el.textContent || el.value || '').replace(/\s+/g, ' ').trim().slice(0, 40);
    return `${tag}${id}${cls} "${text}"`;
  };
  const textOf = (node) => {
    // the text a screen reader reads in a subtree: aria-hidden parts left out, visually
    // hidden ones kept
    let out = '';
    for (const child of node.childNodes) {
      if (child.nodeType === 3) out += child.textContent;
      else if (child.nodeType === 1 && child.getAttribute('aria-hidden') !== 'true') {
        out += child.getAttribute('aria-label') || textOf(child);
      }
    }
    return out;
  };
  const nameOf = (el) => {
    const by = el.getAttribute('aria-labelledby');
    if (by) return by.split(/\s+/).map((id) => { const n = document.getElementById(id); return n ? textOf(n) : ''; }).join(' ');
    if (el.getAttribute('aria-label')) return el.getAttribute('aria-label');
    if (el.labels && el.labels.length) return Array.from(el.labels).map(textOf).join(' ');
    if (el instanceof SVGElement) {
      const t = el.querySelector('title');
      if (t) return t.textContent;
    }
    if (['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName)) return el.getAttribute('title') || '';
    return textOf(el) || el.getAttribute('title') || '';
  };

  // ---- the controls
  const selector = 'a[href], button, input:not([type=hidden]), select, textarea, summary, label.key, [role=button], [tabindex]:not([tabindex="-1"])';
  const controls = [];
  for (const el of document.querySelectorAll(selector)) {
    if (el.classList.contains('skip')) continue;
    if (el.matches('input[type=radio].pick')) {
      // a card key: the radio is drawn by its label, which is the target
      if (!el.labels || !el.labels.length) problems.push(`no label: ${describe(el)}`);
      continue;
    }
    if (!visible(el) || hiddenFromAT(el)) continue;
    const name = nameOf(el).replace(/\s+/g, ' ').trim();
    if (!/[\p{L}\p{N}]/u.test(name)) problems.push(`no accessible name (only "${name}"): ${describe(el)}`);
    if (['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName) && !el.getAttribute('aria-label')
        && !el.getAttribute('aria-labelledby') && !(el.labels && el.labels.length)) {
      problems.push(`field without a label: ${describe(el)}`);
    }
    // a checkbox or radio inside its label: the label is what the thumb taps
    let target = el;
    if ((el.type === 'checkbox' || el.type === 'radio') && el.closest('label')) target = el.closest('label');
    // a link in running text (its paragraph or list item says more than the link)
    if (el.tagName === 'A' && !(el instanceof SVGElement)) {
      const block = el.closest('p, li, td, dd');
      const display = getComputedStyle(el).display;
      if (block && display === 'inline' && textOf(block).trim().length > textOf(el).trim().length + 1) continue;
    }
    // tapped in quick succession (a rank then its suit, two bettors' buttons): no double-tap
    // zoom to wait for or to fall into
    if (el.matches('button, label.key, summary') && getComputedStyle(el).touchAction !== 'manipulation') {
      problems.push(`touch-action ${getComputedStyle(el).touchAction}, not manipulation: ${describe(el)}`);
    }
    const r = target.getBoundingClientRect();
    const box = { el, left: r.left, top: r.top + scrollY, right: r.right, bottom: r.bottom + scrollY };
    if (Math.round(r.width) < MIN || Math.round(r.height) < MIN) {
      problems.push(`target ${Math.round(r.width)}x${Math.round(r.height)} px: ${describe(el)}`);
    }
    let pinned = false;
    for (let n = target; n && n.nodeType === 1; n = n.parentElement) {
      if (['sticky', 'fixed'].includes(getComputedStyle(n).position)) { pinned = true; break; }
    }
    if (!controls.some((c) => c.target === target)) controls.push({ ...box, target, pinned });
  }
  // ---- neighbours a thumb could hit instead
  for (let i = 0; i < controls.length; i++) {
    for (let j = i + 1; j < controls.length; j++) {
      const a = controls[i], b = controls[j];
      if (a.target.contains(b.target) || b.target.contains(a.target)) continue;
      // a bar pinned to the screen's edge (position: sticky) has the page scroll under it
      // (its own padding keeps it apart): it has no fixed neighbours to compare with
      if (a.pinned !== b.pinned) continue;
      const dx = Math.max(b.left - a.right, a.left - b.right);
      const dy = Math.max(b.top - a.bottom, a.top - b.bottom);
      const gap = Math.max(dx, dy);
      if (gap < GAP - 0.5) {
        problems.push(`targets ${gap < 0 ? 'overlap' : Math.round(gap * 10) / 10 + ' px apart'}: ${describe(a.el)} / ${describe(b.el)}`);
      }
    }
  }
  // ---- the width
  const sw = document.scrollingElement.scrollWidth;
  if (sw > innerWidth) problems.push(`the page is ${sw} px wide in a ${innerWidth} px viewport`);
  // ---- the headings
  let last = 0;
  for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    if (!visible(h) || hiddenFromAT(h)) continue;
    const level = Number(h.tagName[1]);
    if ((last === 0 && level !== 1) || level > last + 1) problems.push(`heading h${level} after h${last}: ${describe(h)}`);
    last = level;
  }
  // ---- the contrast of the text
  const rgba = (s) => {
    const m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, under) => ({
    r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a),
    b: top.b * top.a + under.b * (1 - top.a), a: 1,
  });
  const opacity = (el) => {
    let o = 1;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) o *= Number(getComputedStyle(n).opacity);
    return o;
  };
  const background = (el) => {
    // the backgrounds under the text, each as translucent as its element (opacity) makes it
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) {
        const a = c.a * opacity(n);
        layers.push({ ...c, a });
        if (a >= 1) break;
      }
    }
    let bg = { r: 255, g: 255, b: 255, a: 1 };
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.textContent.trim()) continue;
    const el = t.parentElement;
    if (!el || seen.has(el) || el.closest('svg, option, script, .visually-hidden') || !visible(el) || hiddenFromAT(el)) continue;
    seen.add(el);
    const st = getComputedStyle(el);
    const bg = background(el);
    const fg = over({ ...rgba(st.color), a: rgba(st.color).a * opacity(el) }, bg);
    const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    const need = large ? 3 : 4.5;
    const got = ratio(fg, bg);
    if (got < need) problems.push(`contrast ${got.toFixed(2)}:1 (< ${need}): ${describe(el)}`);
  }
  return problems;
}
"""


def audit(page) -> list[str]:
    """The problems of the page as it stands (see the module's docstring)."""
    return page.evaluate(AUDIT_JS, [MIN_TARGET, TOUCH_GAP])


def lang_of(page) -> str:
    return page.locator("html").get_attribute("lang")


FOCUS_JS = r"""
() => {
  // The ring around the focused control: its outline and its box-shadow, each against the
  // background around the control; the best of them, as a contrast ratio (WCAG 1.4.11 asks 3:1).
  const el = document.activeElement;
  const rgba = (s) => {
    const m = s && s.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  let around = { r: 255, g: 255, b: 255, a: 1 };
  for (let n = el.parentElement; n; n = n.parentElement) {
    const c = rgba(getComputedStyle(n).backgroundColor);
    if (c && c.a >= 1) { around = c; break; }
  }
  const target = el.matches('input.pick') && el.labels.length ? el.labels[0] : el;
  const st = getComputedStyle(target);
  const rings = [];
  if (st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) >= 2) rings.push(rgba(st.outlineColor));
  for (const m of (st.boxShadow || '').matchAll(/rgba?\([^)]+\)/g)) rings.push(rgba(m[0]));
  const best = Math.max(0, ...rings.filter(Boolean).map((c) => ratio(c, around)));
  const text = (target.textContent || target.getAttribute('aria-label') || '').replace(/\s+/g, ' ').trim().slice(0, 30);
  return { what: `${target.tagName.toLowerCase()} "${text}"`, best };
}
"""


def focus_rings(page, tabs: int) -> list[tuple[str, float]]:
    """Tab `tabs` times from the top of the page: each control focused, with the contrast of
    its focus ring against what is around it."""
    page.locator("body").focus()
    seen = []
    for _ in range(tabs):
        page.keyboard.press("Tab")
        ring = page.evaluate(FOCUS_JS)
        seen.append((ring["what"], round(ring["best"], 2)))
    return seen


def logged_in_page(browser, live_server, client, contexts: list, user, lang: str, **options):
    """A page in a new browser context (`options`: viewport, has_touch...), logged in as
    `user`, the language chosen as the header's switch chooses it (its cookie); the context is
    appended to `contexts`, for the fixture to close."""
    client.force_login(user)
    context = browser.new_context(locale="en-GB", **options)
    context.add_cookies([
        {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url},
        {"name": "chemin_language", "value": lang, "url": live_server.url},
    ])
    contexts.append(context)
    page = context.new_page()
    page.base = live_server.url
    return page
