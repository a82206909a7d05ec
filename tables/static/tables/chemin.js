/* Chemin: entries posted while the network is down wait in a queue kept on the device and are
   sent again, in the order they were made, each with its own idempotency key, once the network
   is back; an "offline" banner shows while it is down. No inline script anywhere (CSP). */
(function () {
  "use strict";
  var MAX_DELAY = 15000;
  var QUEUED = "X-Chemin-Queued";  // marks a resend of the queue (the server ignores it)
  // How long an entry's post waits for its answer before it is given up and treated like one
  // the network lost: kept first in the queue with its key, sent again later, in order. The
  // browser alone would wait minutes on a stalled server or a half-open connection (a flaky
  // Wi-Fi), holding the send lock, and every entry behind it, without a word. 15 s because a
  // post is answered in tens of milliseconds at a floor's pace and within half a second (p95)
  // with 16 tablets recording without pause (README, "Load"), and the server's own failures
  // (the database or Redis out of reach) are answered 503 within seconds: an answer not there
  // after thirty times the worst of those is not coming. Far
  // shorter would send a slow but working server its entries twice for nothing (harmless, by
  // the key, but each resend waits on the first); far longer would hold the queue behind one
  // lost post for a good part of a coup. A resend is safe whatever became of the post given
  // up: the server answers a replay of its key with the stored answer, and one that arrives
  // while the first is still being processed waits for it and gets its answer
  // (floor/idempotency.py). htmx sends with XMLHttpRequest, which an AbortController cannot
  // stop: the timeout is the request's own (htmx sets xhr.timeout from the request's config,
  // aborts it and says htmx:timeout). A test shortens it: window.cheminSendTimeoutMs.
  var SEND_TIMEOUT_MS = 15000;
  function sendTimeout() {
    var ms = Number(window.cheminSendTimeoutMs);
    return ms > 0 ? ms : SEND_TIMEOUT_MS;
  }
  // An entry whose answer takes longer than this is said to wait for the server's answer.
  function slowAfter() { return Math.min(2000, sendTimeout() / 2); }
  var PREFIX = "chemin:pending:";
  var banner = function () { return document.getElementById("offline"); };
  function showOffline(on) {
    var el = banner();
    if (el) { el.hidden = !on; }
    document.body.classList.toggle("is-offline", !!on);
  }

  window.addEventListener("offline", function () { showOffline(true); });
  window.addEventListener("online", function () { showOffline(false); flushSoon(0); });

  // ----------------------------------------------------------------- the queue of entries
  // One queue per user and table (the panel's data-queue; elsewhere the user and the page),
  // kept in localStorage: a reload, a closed tab, a crashed browser or a rebooted tablet do
  // not drop an entry, and reopening the table's page sends what waits. Every entry keeps the
  // idempotency key of the form it was made in: sending it again, even after it reached the
  // server before the network dropped, is answered from the stored answer, never entered
  // twice.
  var panel = document.querySelector("[data-queue]");
  var user = document.body.getAttribute("data-user") || "";
  // Once: a refusal page swapped in later has no panel to ask.
  var STORE = PREFIX + (panel ? panel.getAttribute("data-queue") : (user || "-") + ":" + window.location.pathname);
  // Each entry under its own key, STORE#id: adding or removing one never rewrites the others.
  // A tab's localStorage is a copy that another tab's writes reach a few milliseconds later
  // (even after a Web Lock passed between them), so a queue kept as one list and rewritten
  // whole could lose the entry another tab had just added.
  var ENTRY = STORE + "#";
  // Where the queue was kept before (one list in sessionStorage, this tab only): moved on load.
  var OLD_STORE = PREFIX + (panel ? panel.getAttribute("data-queue") : window.location.pathname);

  // The server keeps an entry's key (and so its answer) this many days (IDEMPOTENCY_KEY_DAYS,
  // idempotency_purge): an entry older than that, sent again, could be entered twice, so it
  // is held for the croupier instead. Its age is told by the server's clock (the page's
  // data-now), not the tablet's, which may be off.
  var settings = document.getElementById("pending");
  var KEEP_MS = Number(settings && settings.getAttribute("data-keep-days")) * 86400000 || 7 * 86400000;
  var MARGIN_MS = 3600000;  // an hour short of it: the time on the way, the clocks' estimate
  var rendered = Number(settings && settings.getAttribute("data-now")) * 1000;
  var offset = rendered ? rendered - Date.now() : 0;
  function serverNow() { return Date.now() + offset; }
  function held(entry) { return serverNow() - (entry.made || 0) > KEEP_MS - MARGIN_MS; }
  // What an entry is, as stored (every tab on the table reads it, and a reloaded tab too):
  // - flight {tab, until}: a tab is sending it now (a tap, or the queue), and no other sends
  //   it until that tab has its answer, gives it up, or is gone (until: its send's timeout and
  //   a margin, by this device's clock; a tab leaving lets it go at once: pagehide);
  // - slow: it was sent and no answer has come yet, the post may have reached the server: it
  //   is said to wait for the server's answer ("do not enter it again") until answered;
  // - unconfirmed {status}: the server failed on it (a 500): whether it was recorded is not
  //   known (see answered()), so it is not sent by itself; the croupier sends it again (its
  //   key makes that safe) or discards it;
  // - large {question, button, values}: sent again, it was a typed amount the server asks about
  //   before entering it (409, large_amount_unconfirmed: see largeQuestion()); it is not sent by
  //   itself, the croupier confirms it (values: the panel's confirmation, a new key) or discards it;
  // - answered {tab, at}: a tab has its answer and reports it (claim()): no other does.
  //   A mark older than ANSWERED_MS is a tab that left (closed, discarded) before removing the
  //   entry or reporting it: the entry is sent again (its key gives the first answer back) and
  //   reported, not kept unseen forever, nor dropped without a word.
  var ANSWERED_MS = 5000;
  function answeredNow(entry) { return !!entry.answered && Date.now() - (entry.answered.at || 0) <= ANSWERED_MS; }
  function waiting(entry) { return !answeredNow(entry) && !entry.unconfirmed && !entry.large && !held(entry); }
  function decided(entry) { return !answeredNow(entry) && (held(entry) || !!entry.unconfirmed || !!entry.large); }
  // An entry asked about is kept for the croupier whatever its age: confirmed, it is sent
  // under the confirmation's key, new, whose first post is to come (confirmLarge()).
  function tooOld(entry) { return held(entry) && !entry.large; }
  function newId() { return Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10); }

  function storage(kind) {
    try { return window[kind]; } catch (e) { return null; }  // refused (privacy settings)
  }
  var local = storage("localStorage");
  // No storage, or it refused a write (full): this page keeps the queue, as before.
  var memoryOnly = !local;
  var memory = [];
  function parse(raw, fallback) {
    try { var value = JSON.parse(raw); return value === null || value === undefined ? fallback : value; }
    catch (e) { return fallback; }
  }
  function byOrder(a, b) { return (a.order - b.order) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0); }
  function stored() {
    if (memoryOnly) { return memory.slice(); }
    var list = [];
    try {
      for (var i = 0; i < local.length; i += 1) {
        var k = local.key(i);
        var entry = k && k.indexOf(ENTRY) === 0 ? parse(local.getItem(k), null) : null;
        if (entry && entry.id && entry.values) { list.push(entry); }
      }
    } catch (e) { return memory.slice(); }
    return list.sort(byOrder);
  }
  function put(entry) {
    if (!memoryOnly) {
      try { local.setItem(ENTRY + entry.id, JSON.stringify(entry)); return; }
      catch (e) { var kept = stored(); memoryOnly = true; memory = kept; }
    }
    memory = memory.filter(function (e) { return e.id !== entry.id; }).concat([entry]).sort(byOrder);
  }
  // The entry as stored now (another tab may have changed it), or null once it is gone.
  function current(id) {
    if (memoryOnly) {
      var kept = memory.filter(function (e) { return e.id === id; })[0];
      return kept ? parse(JSON.stringify(kept), null) : null;
    }
    try { var e = parse(local.getItem(ENTRY + id), null); return e && e.id ? e : null; }
    catch (err) { return null; }
  }
  // Changes the stored entry, if it is still there (never brings back one a tab removed).
  function update(id, change) {
    var e = id ? current(id) : null;
    if (!e) { return null; }
    change(e);
    put(e);
    return e;
  }
  function drop(entry) {
    memory = memory.filter(function (e) { return e.id !== entry.id; });
    if (local) { try { local.removeItem(ENTRY + entry.id); } catch (e) { /* refused: gone from memory */ } }
  }

  // Another tab on the same table (same user) shares the queue: it stores its entries there
  // and sees these (the 'storage' event below). The resends run under an exclusive Web Lock
  // named after the queue, held from the first entry sent to the last answered, so two tabs
  // never send the queue at once. Without Web Locks (an old browser, a page not served over
  // HTTPS) a tab sends only when no other holds the lease written beside the queue: a best
  // effort, as two tabs may write it at the same moment. Either way a tab sends only the
  // first entry and removes it only once answered, so the order holds; and an entry sent
  // twice (another tab's removal not seen yet) gets its stored answer, nothing more.
  var HAS_LOCKS = !!(window.navigator.locks && window.navigator.locks.request);
  var SETTLE_MS = 100;  // the send lock is kept this long after the last write: see ENTRY
  // A tab with an answer reads its claim back this long after writing it (claim()). With Web
  // Locks the lock, kept SETTLE_MS after the last write, already orders the tabs. Without,
  // two tabs may have sent the entry at once, and on a busy tablet their writes reach each
  // other later than SETTLE_MS: each reading only its own mark, both would report it.
  var CLAIM_MS = HAS_LOCKS ? SETTLE_MS : 500;
  var TAB = newId();
  var LEASE = "chemin:sending:" + STORE.slice(PREFIX.length);
  // The lease is taken anew as each entry is sent, for as long as that send may last (its
  // timeout) and a margin for handling its answer; a send given up lets it go with the lock
  // (finish). So no tab holds it past a send's timeout, and one closed mid-send frees it by then.
  var LEASE_MARGIN_MS = 5000;
  var BUSY = "another tab is sending";
  function leaseHolder() {
    try { var l = parse(local.getItem(LEASE), null); return l && l.until > Date.now() ? l.tab : null; }
    catch (e) { return null; }
  }
  function takeLease() {
    var until = Date.now() + sendTimeout() + LEASE_MARGIN_MS;
    try { local.setItem(LEASE, JSON.stringify({ tab: TAB, until: until })); } catch (e) { /* */ }
  }
  function dropLease() {
    try { if (local && leaseHolder() === TAB) { local.removeItem(LEASE); } } catch (e) { /* it expires */ }
  }
  function sendLocked(task) {
    if (HAS_LOCKS) { return window.navigator.locks.request(STORE, { mode: "exclusive" }, task); }
    if (memoryOnly) { return Promise.resolve().then(task); }
    var holder = leaseHolder();
    if (holder && holder !== TAB) { return Promise.reject(new Error(BUSY)); }
    takeLease();
    return new Promise(function (resolve) { window.setTimeout(resolve, 50); }).then(function () {
      if (leaseHolder() !== TAB) { throw new Error(BUSY); }  // another tab wrote it last: its turn
      return task();
    }).then(dropLease, function (e) { dropLease(); throw e; });
  }
  // A tab leaving (a reload, a closed tab) stops its sends: what it was sending waits for the
  // server's answer (it may have reached it) and is sent again, with its key, from the tab
  // that reopens the table or from another one on it, at once rather than once its flight
  // expires; a tap on its way not kept yet is kept so (it would be lost with the tab).
  window.addEventListener("pagehide", function () {
    if (!HAS_LOCKS) { dropLease(); }
    taps.forEach(function (xhr) { if (xhr.readyState !== 4) { keepTap(xhr); } });
    queue.concat(stored()).forEach(function (e) {
      update(e.id, function (s) {
        if (s.flight && s.flight.tab === TAB) { s.flight = null; s.slow = true; }
      });
    });
  });

  var queue = [];       // what this page shows: the entries as stored
  var sending = null;   // the entry on its way to the server
  var busy = false;     // waiting for the send lock, or holding it
  var again = false;    // a flush was asked for meanwhile
  var release = null;   // lets the send lock go
  var attempt = 0;      // network failures in a row: the next try waits longer
  var timer = null;
  // An entry sent whose answer is slow to come (or never came: the send was given up, the
  // tab sending it was closed) is marked so where it is stored: every tab on the table, and
  // a reloaded one, says it is on its way, and not to enter it again, until it is answered.
  // (A network failure after that does not unsay it: the post before may have arrived.)
  var slowTimer = null;
  var taps = [];  // this page's taps on their way (their xhr)
  function stopSlowTimer() { if (slowTimer) { window.clearTimeout(slowTimer); slowTimer = null; } }
  function markSlow(id) {
    update(id, function (e) { e.slow = true; });
    refresh();
  }
  // Its send is over (given up, failed, answered "try later"): another tab may send it.
  function land(id) {
    update(id, function (e) { e.flight = null; });
  }
  function flying(entry) {
    return !!(entry.flight && entry.flight.until > Date.now() && !(sending && sending.id === entry.id));
  }

  function refresh() { queue = stored(); showPending(); }
  function pageTitle() { return document.title.replace(/\s*·\s*Chemin$/, ""); }

  // Runs of the markup's ASCII whitespace read as one space; the no-break spaces stay (they hold
  // "€" to its amount and group its thousands), not \s, which takes them too.
  function text(el) { return el ? (el.textContent || "").replace(/[ \t\n\r\f]+/g, " ").replace(/^ | $/g, "") : ""; }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (all, name) { return name in values ? values[name] : all; });
  }

  // What the croupier tapped, in his words: "Bet of Rossi: € 100", "Card: 3 ♣".
  function labelFor(cfg) {
    var form = cfg.elt && cfg.elt.closest ? cfg.elt.closest("form") || cfg.elt : cfg.elt;
    var what = form && form.getAttribute ? form.getAttribute("data-entry") || "" : "";
    var parts = [];
    if (form && form.querySelectorAll) {
      form.querySelectorAll("input[type=radio]:checked").forEach(function (r) {
        parts.push(text(form.querySelector("label[for='" + r.id + "']")) || r.value);
      });
    }
    var button = cfg.triggeringEvent && cfg.triggeringEvent.submitter;
    if (button) {
      var shown = button.cloneNode(true);  // its words, without the "against the rule" note
      shown.querySelectorAll(".why").forEach(function (x) { x.remove(); });
      parts.push(text(shown) || button.getAttribute("aria-label") || button.value);
    }
    var custom = form && form.querySelector ? form.querySelector("input[name=amount][type=text]") : null;
    if (custom && custom.value && button && button.value === "custom") { parts.push("€\u00a0" + custom.value); }
    var how = parts.filter(Boolean).join(" ");
    return what && how ? what + ": " + how : (what || how || cfg.path);
  }

  function sameValues(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  function sameEntry(a, b) { return a.id === b.id || (!!a.key && a.key === b.key && sameValues(a.values, b.values)); }

  function enqueue(cfg, values, state) {
    var last = queue.reduce(function (n, e) { return Math.max(n, e.order || 0); }, 0);
    var now = serverNow();
    var entry = {
      id: newId(), url: cfg.path, verb: cfg.verb, values: values, key: values.idempotency_key || "",
      label: labelFor(cfg), target: cfg.target && cfg.target.id ? "#" + cfg.target.id : "#tablet",
      made: now,  // by the server's clock: see held()
      order: Math.max(now, last + 1),  // behind every entry this page knows of
      page: window.location.pathname, title: pageTitle()  // where it is sent from: showElsewhere()
    };
    // Stored with its state at once (a tab that sees it appear must not send one kept aside).
    Object.keys(state || {}).forEach(function (k) { entry[k] = state[k]; });
    // The panel's confirmation of a large amount the queue keeps asked (the same key: the
    // question's answer swapped in the panel carries it) is that entry's answer: it is
    // confirmed, in its place, not entered a second time beside it.
    var asked = queue.concat(stored()).filter(function (e) { return askedAs(e, entry.key); })[0];
    if (asked) { return confirmLarge(asked.id) || asked; }
    // A second tap on the very same entry is the same entry. Stored at once, without waiting
    // for a lock: the tab may be closed the next moment, and a key of its own needs none.
    var known = queue.concat(stored()).filter(function (e) { return sameEntry(e, entry); })[0];
    if (!known) { put(entry); }
    refresh();
    return known || entry;
  }

  // Entries kept in sessionStorage by the version before (a tablet updated mid-evening): moved
  // into the store ahead of what is there (they were made before this page was loaded), and
  // only then removed from the old place. They did not say when they were made: they count
  // from now.
  function migrate() {
    var session = storage("sessionStorage");
    var old = [];
    try { old = session ? parse(session.getItem(OLD_STORE), []) : []; } catch (e) { old = []; }
    if (!Array.isArray(old) || !old.length) { return; }
    var list = stored();
    var now = serverNow();
    var first = list.length ? Math.min(now, list[0].order) : now;
    old.forEach(function (e, i) {
      e.id = e.id || newId();
      e.page = e.page || window.location.pathname;
      e.title = e.title || pageTitle();
      e.made = e.made || now;
      e.order = first - old.length + i;
      if (!list.some(function (s) { return sameEntry(s, e); })) { put(e); }
    });
    if (!memoryOnly) { try { session.removeItem(OLD_STORE); } catch (e) { /* it goes next time */ } }
  }

  function csrfToken() {
    var el = document.querySelector("input[name=csrfmiddlewaretoken]");
    return el ? el.value : null;
  }

  function flushSoon(delay) {
    if (timer) { window.clearTimeout(timer); }
    timer = window.setTimeout(function () { timer = null; flush(); }, delay);
  }

  // The entries go one after another under the send lock, each the first of the queue as
  // stored, removed from it only once answered; the lock goes when none is left to send (or
  // the network fails again), SETTLE_MS after this page's last write.
  function flush() {
    if (busy) { again = true; return; }
    if (!window.htmx || !queue.some(waiting)) { return; }
    busy = true;
    sendLocked(function () {
      return new Promise(function (done) { release = done; next(); });
    }).catch(function (e) {
      busy = false;
      if (e && e.message === BUSY) { flushSoon(1000); }  // another tab sends: its answers show here too
    });
  }

  function next() {
    if (!HAS_LOCKS && !memoryOnly) { takeLease(); }
    refresh();
    var entry = null;
    for (var i = 0; i < queue.length && !entry; i += 1) {
      var e = queue[i];
      if (waiting(e)) { entry = e; }
    }
    if (!entry) { finish(); return; }
    if (flying(entry)) {  // on its way from a tap, or from a tab without Web Locks: its turn
      var wait = entry.flight.until - Date.now();
      finish();
      flushSoon(Math.max(wait, 0) + SETTLE_MS);
      return;
    }
    sending = entry;
    update(entry.id, function (s) {
      s.answered = null;  // (a stale mark: see answeredNow)
      s.flight = { tab: TAB, until: Date.now() + sendTimeout() + LEASE_MARGIN_MS };
    });
    send(entry);
  }

  function finish() {
    sending = null;
    stopSlowTimer();
    var done = release;
    release = null;
    window.setTimeout(function () {
      busy = false;
      if (done) { done(); }
      if (again) { again = false; if (!timer) { flushSoon(0); } }  // (a retry after a failure waits its turn)
    }, SETTLE_MS);
  }

  function send(entry) {
    var values = {};
    Object.keys(entry.values).forEach(function (k) { values[k] = entry.values[k]; });
    // The token of the page as it is now (not fingerprinted): a reload or a new login renewed it.
    var token = csrfToken();
    if (token && "csrfmiddlewaretoken" in values) { values.csrfmiddlewaretoken = token; }
    var headers = {};
    headers[QUEUED] = entry.key || "1";
    var target = document.querySelector(entry.target) || document.getElementById("tablet");
    var swap = "outerHTML";
    if (!target) {  // a refusal page took the panel's place: the answer goes where it was
      target = document.getElementById("main") || document.body;
      swap = "innerHTML";
    }
    stopSlowTimer();
    slowTimer = window.setTimeout(function () {
      slowTimer = null;
      if (sending && sending.id === entry.id) { markSlow(entry.id); }
    }, slowAfter());
    var sent = window.htmx.ajax(entry.verb, entry.url, {
      source: target, target: target, swap: swap, values: values, headers: headers
    });
    // A failed send rejects the promise: htmx:sendError below has it in hand already.
    if (sent && sent.catch) { sent.catch(function () {}); }
  }

  function isResend(detail) {
    var cfg = detail && detail.requestConfig;
    return !!(sending && cfg && cfg.headers && cfg.headers[QUEUED]);
  }

  // The server's own words for its answer: the panel's outcome, or the refusal page's.
  function serverMessage(xhr) {
    try {
      var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
      return text(doc.getElementById("result")) || text(doc.querySelector("[role=alert]")) || text(doc.querySelector("h1"));
    } catch (e) { return ""; }
  }

  // A typed amount of 100 times the least it may be, or more, is asked again before it is
  // entered: the server answers 409, writing nothing, with the panel's question (#result, its
  // stable code in data-code) and the form that confirms it (form.confirm-large: the same
  // fields, confirm_large=yes, a new key). Told by the code, never by the words (translated,
  // reworded). The question's words, its button's (the amount it enters, in the panel's words
  // and language) and what that form sends; null for any other answer.
  var LARGE = "large_amount_unconfirmed";
  function largeQuestion(xhr) {
    if (xhr.status !== 409) { return null; }
    try {
      var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
      var result = doc.getElementById("result");
      var form = doc.querySelector("form.confirm-large");
      if (!result || result.getAttribute("data-code") !== LARGE || !form) { return null; }
      var values = {};
      form.querySelectorAll("input[name]").forEach(function (i) { values[i.name] = i.value; });
      if (!values.idempotency_key || values.confirm_large !== "yes") { return null; }
      return { question: text(result), button: text(form.querySelector("button")), values: values };
    } catch (e) { return null; }
  }
  function askedAs(entry, key) { return !!(key && entry.large && entry.large.values.idempotency_key === key); }
  // The croupier's yes: the entry becomes the panel's confirmation (its fields, confirm_large,
  // its new key) and waits again, in its place in the queue (its order is kept).
  function confirmLarge(id) {
    return update(id, function (e) {
      if (!e.large) { return; }
      e.values = e.large.values;
      e.key = e.values.idempotency_key;
      e.large = null;
      e.made = serverNow();  // its key is new, first sent now: see held()
    });
  }

  function answered(xhr) {
    var entry = sending;
    stopSlowTimer();
    if (UNREACHED[xhr.status]) {  // still unavailable: try again later, the entry stays first
      land(entry.id);
      attempt += 1;
      finish();
      flushSoon(backoff());
      return;
    }
    attempt = 0;
    if (xhr.getResponseHeader("HX-Redirect")) {
      // Logged out meanwhile: nothing was entered. The entries stay queued for this user and
      // table, and go once he is back on its page after logging in.
      land(entry.id);
      finish();
      return;
    }
    if (xhr.status >= 500) {
      // The server failed (a 500: a fault of its own, not a refusal with a reason). That
      // does not say the entry was not recorded: the page answering an entry is made after
      // the entry is committed (tables/views_tablet.py: form_post, then the panel), so the
      // failure may come after it; and a post before this one (given up, lost by the
      // network) may have been recorded already. Not "NOT recorded" then, and not dropped:
      // kept aside for the croupier, who checks the table and sends it again (its key makes
      // that safe: recorded, the server answers with the first answer) or discards it.
      update(entry.id, function (e) { e.flight = null; e.slow = false; e.unconfirmed = { status: xhr.status }; });
      next();
      return;
    }
    var asked = largeQuestion(xhr);
    if (asked) {
      // Not refused, not recorded: asked. Kept aside in its place, with the question and the
      // panel's confirmation, for the croupier to confirm or discard (showHeld()); like a
      // refused entry (or one not confirmed), it does not hold back the entries behind it.
      // (Asked already, from another tab: that question stands, its key with it.)
      update(entry.id, function (e) { e.flight = null; e.slow = false; e.large = e.large || asked; });
      next();
      return;
    }
    var ok = xhr.status < 400;
    var reason = serverMessage(xhr);
    if (!ok && !reason) { reason = String(xhr.status); }
    claim(entry, function (mine) {
      if (mine) { report(entry, ok, reason); }
      next();
    });
  }

  // An entry is reported by one tab only. Without Web Locks two tabs may send it (one did
  // not see yet that the other had its answer and removed it): the second gets the stored
  // answer, and would say it again. So a tab with an answer marks the stored entry answered
  // by it, reads it back once the other tabs' writes have reached it (CLAIM_MS: the last
  // write wins, and both read the same), and reports it only if its mark
  // stands; an entry gone, or answered by another tab, is not reported again.
  function claim(entry, then) {
    if (memoryOnly) { drop(entry); then(true); return; }
    var seen = current(entry.id);
    if (!seen || answeredNow(seen)) { then(false); return; }
    update(entry.id, function (e) { e.answered = { tab: TAB, at: Date.now() }; e.flight = null; });
    window.setTimeout(function () {
      var after = current(entry.id);
      var mine = !!(after && after.answered && after.answered.tab === TAB);
      if (mine) { drop(entry); }
      then(mine);
    }, CLAIM_MS);
  }

  // ----------------------------------------------------------------- what the user sees
  function showPending() {
    var box = document.getElementById("pending");
    showHeld();
    if (!box) { return; }
    var list = queue.filter(waiting);
    if (!list.length) { box.hidden = true; box.textContent = ""; return; }
    // (An entry kept aside for the croupier, or answered already, is not listed here.)
    var head = fill(box.getAttribute(list.length === 1 ? "data-one" : "data-many") || "{n}", { n: list.length });
    box.textContent = "";
    var p = document.createElement("p");
    p.textContent = head;
    var ol = document.createElement("ol");
    list.forEach(function (e) {
      var li = document.createElement("li");
      li.textContent = e.slow ? fill(box.getAttribute("data-slow") || "{entry}", { entry: e.label }) : e.label;
      li.classList.toggle("slow", !!e.slow);
      ol.appendChild(li);
    });
    box.appendChild(p);
    box.appendChild(ol);
    box.hidden = false;
  }

  // When an entry was made, in the casino's zone (data-time-zone) as every time on the pages,
  // not the tablet's own (a device left on UTC or on its maker's zone), and written as they
  // write it: 2026-10-25 02:30, not in the browser's locale format (Oct 25, 2026, 2:30 AM).
  var ZONE = (settings && settings.getAttribute("data-time-zone")) || undefined;
  // In the hour the October change repeats the clock reads the same twice: such a time
  // carries its UTC offset, "2026-10-25 02:30+02:00", as the pages' times do (the clock filter).
  function when(entry) {
    var date = new Date((entry.made || 0) - offset);
    try {
      var format = new Intl.DateTimeFormat("en-GB", {
        timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "longOffset"
      });
      var wall = function (moment) {
        var parts = {};
        format.formatToParts(moment).forEach(function (p) { parts[p.type] = p.value; });
        parts.text = parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute;
        return parts;
      };
      var at = wall(date);
      var text = at.text;
      var hour = 3600000;
      if (wall(new Date(date.getTime() - hour)).text === text || wall(new Date(date.getTime() + hour)).text === text) {
        // "GMT+02:00" (or "GMT" for UTC itself, which repeats no hour).
        text += at.timeZoneName.replace(/^GMT/, "") || "+00:00";
      }
      return text;
    } catch (e) { return date.toISOString().slice(0, 16).replace("T", " ") + " UTC"; }
  }

  // The entries held back for the croupier's decision: too old to send by themselves, not
  // confirmed (the server failed on them), or asked about (a large amount): each with what it
  // was, when it was made, a button to send it again when that is safe (its key is still
  // kept: not for a held one), or the question's and its button, and one to discard it once
  // he has decided.
  function showHeld() {
    var box = document.getElementById("queue-held");
    if (!box) { return; }
    var list = box.querySelector("ul");
    list.textContent = "";
    var kept = queue.filter(decided);
    kept.forEach(function (e) {
      var li = document.createElement("li");
      var p = document.createElement("p");
      var old = tooOld(e);
      var asked = !old && e.large;
      p.textContent = fill(box.getAttribute(old ? "data-held" : asked ? "data-large" : "data-unconfirmed") || "{entry}", {
        entry: e.label, when: when(e), days: Math.round(KEEP_MS / 86400000),
        status: e.unconfirmed ? e.unconfirmed.status : "", question: asked ? e.large.question : ""
      });
      li.appendChild(p);
      if (asked) {
        // The panel's confirmation, in its words: the amount it enters.
        var yes = document.createElement("button");
        yes.type = "button";
        yes.className = "primary";
        yes.setAttribute("data-confirm-entry", e.id);
        yes.textContent = e.large.button;
        li.appendChild(yes);
      } else if (!old) {
        var resend = document.createElement("button");
        resend.type = "button";
        resend.setAttribute("data-resend-entry", e.id);
        resend.textContent = box.getAttribute("data-resend") || "↻";
        li.appendChild(resend);
      }
      var button = document.createElement("button");
      button.type = "button";
      button.setAttribute("data-discard-entry", e.id);
      button.textContent = box.getAttribute("data-discard") || "×";
      li.appendChild(button);
      list.appendChild(li);
    });
    box.hidden = !kept.length;
  }

  // This user's entries kept for other pages (another table; one whose session has closed
  // since, or that he no longer runs): said on every page, with a link to each, where they
  // are sent, or refused with the reason. Never forgotten on the device.
  function showElsewhere() {
    var box = document.getElementById("queue-elsewhere");
    if (!box) { return; }
    var prefix = PREFIX + user + ":";
    var pages = {};
    var n = 0;
    try {
      for (var i = 0; user && local && i < local.length; i += 1) {
        var k = local.key(i);
        if (!k || k.indexOf(prefix) !== 0 || k.indexOf(ENTRY) === 0 || k.indexOf("#") < 0) { continue; }
        var e = parse(local.getItem(k), null);
        if (!e || !e.page) { continue; }
        n += 1;
        pages[e.page] = pages[e.page] || { title: e.title || e.page, n: 0 };
        pages[e.page].n += 1;
      }
    } catch (err) { n = 0; }
    box.textContent = "";
    box.hidden = !n;
    if (!n) { return; }
    var p = document.createElement("p");
    p.textContent = fill(box.getAttribute(n === 1 ? "data-one" : "data-many") || "{n}", { n: n });
    var list = document.createElement("ul");
    Object.keys(pages).forEach(function (href) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = href;
      a.textContent = pages[href].title + " (" + pages[href].n + ")";
      li.appendChild(a);
      list.appendChild(li);
    });
    box.appendChild(p);
    box.appendChild(list);
  }

  // Every entry sent again says what became of it: recorded, or refused and why (never a
  // silent drop). The list stays until the croupier dismisses it.
  function report(entry, ok, reason) {
    var box = document.getElementById("queue-report");
    if (!box) { return; }
    var list = box.querySelector("ul");
    var li = document.createElement("li");
    li.className = ok ? "ok" : "err";
    li.textContent = fill(box.getAttribute(ok ? "data-sent" : "data-refused") || "{entry}: {reason}",
      { entry: entry.label, reason: reason });
    list.appendChild(li);
    box.classList.toggle("err", !!box.querySelector("li.err"));
    box.hidden = false;
  }
  document.addEventListener("click", function (evt) {
    var button = evt.target && evt.target.closest ? evt.target.closest("[data-dismiss]") : null;
    if (!button) { return; }
    var box = document.getElementById(button.getAttribute("data-dismiss"));
    if (box) { box.hidden = true; box.querySelector("ul").textContent = ""; box.classList.remove("err"); }
  });
  document.addEventListener("click", function (evt) {
    var button = evt.target && evt.target.closest ? evt.target.closest("[data-discard-entry]") : null;
    if (!button) { return; }
    var id = button.getAttribute("data-discard-entry");
    drop({ id: id });
    refresh();
  });
  // A large amount confirmed: sent, in its place in the queue, as the panel's confirmation.
  document.addEventListener("click", function (evt) {
    var button = evt.target && evt.target.closest ? evt.target.closest("[data-confirm-entry]") : null;
    if (!button) { return; }
    confirmLarge(button.getAttribute("data-confirm-entry"));
    refresh();
    flushSoon(0);
  });
  // Sent again with its key, in its place in the queue: recorded before, the server answers
  // with the first answer; not recorded, it is now.
  document.addEventListener("click", function (evt) {
    var button = evt.target && evt.target.closest ? evt.target.closest("[data-resend-entry]") : null;
    if (!button) { return; }
    update(button.getAttribute("data-resend-entry"), function (e) { e.unconfirmed = null; });
    refresh();
    flushSoon(0);
  });

  // Another tab changed the queue (an entry tapped there, one sent from there): the list
  // shown here follows, and what now waits is sent.
  window.addEventListener("storage", function (evt) {
    if (evt.key === null || evt.key.indexOf(PREFIX) === 0) { showElsewhere(); }
    if (evt.key !== null && evt.key.indexOf(ENTRY) !== 0) { return; }
    refresh();
    if (queue.some(waiting)) { flushSoon(0); }
  });

  // Logging out leaves the entries waiting on this device for this user (they go once he is
  // back on the table's page); the button says so before he leaves, and he may stay.
  function waitingFor(who) {
    if (!who) { return 0; }
    var prefix = PREFIX + who + ":";
    var n = memoryOnly ? queue.length : 0;
    [local, storage("sessionStorage")].forEach(function (store) {
      try {
        for (var i = 0; store && i < store.length; i += 1) {
          var k = store.key(i);
          if (!k || k.indexOf(prefix) !== 0 || (memoryOnly && k.indexOf(ENTRY) === 0)) { continue; }
          var value = parse(store.getItem(k), null);
          n += Array.isArray(value) ? value.length : (value ? 1 : 0);  // the old lists, the entries
        }
      } catch (e) { /* storage refused: nothing to count there */ }
    });
    return n;
  }
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form || !form.matches || !form.matches("form[data-logout]")) { return; }
    var n = waitingFor(user);
    if (n && !window.confirm(fill(form.getAttribute(n === 1 ? "data-one" : "data-many") || "{n}", { n: n }))) {
      evt.preventDefault();
    }
  });

  // ----------------------------------------------------------------- htmx
  // While entries wait, a new one joins the end of the queue instead of overtaking them
  // (entries held back for the croupier do not hold the others: he may enter one again).
  document.addEventListener("htmx:configRequest", function (evt) {
    var d = evt.detail;
    // An entry (a post carrying its key: a tap, or the queue sending one again) waits so long
    // for its answer, then is kept like one the network lost (htmx:timeout below).
    var entry = String(d.verb).toLowerCase() !== "get" &&
      ((d.headers && d.headers[QUEUED]) || (d.formData && d.formData.has && d.formData.has("idempotency_key")));
    if (entry) { d.timeout = sendTimeout(); }
    if (!queue.some(waiting) || (d.headers && d.headers[QUEUED]) || String(d.verb).toLowerCase() === "get") { return; }
    evt.preventDefault();
    var values = {};
    var data = d.formData || d.parameters;
    if (data && data.forEach) { data.forEach(function (v, k) { values[k] = v; }); }
    enqueue({ path: d.path, verb: d.verb, elt: d.elt, target: d.target, triggeringEvent: d.triggeringEvent }, values);
    flushSoon(0);
  });

  document.addEventListener("htmx:sendError", function (evt) {
    var cfg = evt.detail.requestConfig;
    if (!cfg || !window.htmx) { return; }
    showOffline(true);
    attempt += 1;
    var delay = backoff();
    if (isResend(evt.detail)) {  // still down: try again later, the entry stays first
      land(sending.id);
      finish();
      flushSoon(delay);
      return;
    }
    var values = {};
    if (cfg.formData && cfg.formData.forEach) { cfg.formData.forEach(function (v, k) { values[k] = v; }); }
    // An entry only (a post with its key), as after a timeout or a 503: a page's own request
    // (a card's poll every 5 s, a check) enters nothing, asks again by itself, and sent again
    // without a key could not be told from a first one.
    if (!values.idempotency_key) { flushSoon(delay); return; }
    land(enqueue(cfg, values).id);  // (kept already if it was slow: its flight is over)
    flushSoon(delay);
  });

  // No answer within sendTimeout(): the server stalled, or the connection died without a word
  // (a half-open TCP connection on a flaky Wi-Fi). Whether the server took the entry or not,
  // it is kept, with its key, like one the network lost (a resend stays first in the queue, a
  // tap joins it), and sent again in order: a replay gets the stored answer, so it is never
  // entered twice. Until an answer comes the list says it waits for the server's answer.
  document.addEventListener("htmx:timeout", function (evt) {
    var cfg = evt.detail.requestConfig;
    if (!cfg || !window.htmx) { return; }
    attempt += 1;
    var delay = backoff();
    if (isResend(evt.detail)) {  // the entry stays first; the send lock (or lease) goes meanwhile
      stopSlowTimer();
      update(sending.id, function (e) { e.flight = null; e.slow = true; });
      refresh();
      finish();
      flushSoon(delay);
      return;
    }
    var values = {};
    if (cfg.formData && cfg.formData.forEach) { cfg.formData.forEach(function (v, k) { values[k] = v; }); }
    if (!values.idempotency_key) { return; }
    var entry = enqueue(cfg, values);
    update(entry.id, function (e) { e.flight = null; e.slow = true; });
    refresh();
    sayWaiting(entry.label);
    flushSoon(delay);
  });

  // A tap whose answer is slow to come is said to wait for it where its outcome will show (the
  // panel's #result), so the croupier does not tap it again, and is kept in the queue as on
  // its way from this tab (flight): every tab on the table says it waits for the server's
  // answer, a reload keeps it, and entries made meanwhile go behind it. Answered, it leaves
  // the queue (the answer shows in the panel); given up after the timeout, it waits there to
  // be sent again (above). The queue's own resends are said in that list.
  document.addEventListener("htmx:beforeSend", function (evt) {
    var cfg = evt.detail.requestConfig;
    var xhr = evt.detail.xhr;
    if (!cfg || !cfg.timeout || !xhr || (cfg.headers && cfg.headers[QUEUED])) { return; }
    var label = labelFor(cfg);  // as tapped: the form may change meanwhile
    xhr.cheminTap = cfg;
    taps.push(xhr);
    window.setTimeout(function () {
      if (xhr.readyState !== 4) { sayWaiting(label); keepTap(xhr); }  // (4: answered, failed or given up)
    }, slowAfter());
  });
  function keepTap(xhr) {
    var cfg = xhr.cheminTap;
    if (!cfg || xhr.cheminEntry) { return; }
    var values = {};
    if (cfg.formData && cfg.formData.forEach) { cfg.formData.forEach(function (v, k) { values[k] = v; }); }
    if (!values.idempotency_key) { return; }
    var entry = enqueue(cfg, values);
    xhr.cheminEntry = entry.id;
    update(entry.id, function (e) {
      e.slow = true;
      e.flight = { tab: TAB, until: Date.now() + sendTimeout() + LEASE_MARGIN_MS };
    });
    refresh();
  }
  // The tap's answer came (not a failure: those keep it, below): it leaves the queue, and
  // so does the same entry kept aside before (a tap the server failed on, tapped again; the
  // panel's confirmation of a large amount the queue keeps asked).
  function tapDone(xhr) {
    taps = taps.filter(function (x) { return x !== xhr; });
    if (!xhr.status || xhr.status >= 500) { return; }  // (a 5xx keeps it: htmx:responseError)
    if (xhr.getResponseHeader("HX-Redirect")) {
      // Logged out meanwhile: nothing was entered (as for the queue's entries: answered()). A
      // tap kept on its way, which the lists said not to enter again, stays in the queue and
      // goes once he is back on the table's page.
      if (xhr.cheminEntry) { land(xhr.cheminEntry); }
      return;
    }
    var key = keyOf(xhr.cheminTap);
    var gone = queue.concat(stored()).filter(function (e) {
      return e.id === xhr.cheminEntry || (key && e.key === key && e.unconfirmed) || askedAs(e, key);
    });
    if (!gone.length) { return; }
    gone.forEach(drop);
    refresh();
    if (queue.some(waiting)) { flushSoon(0); }
  }
  function keyOf(cfg) {
    var key = "";
    if (cfg && cfg.formData && cfg.formData.forEach) {
      cfg.formData.forEach(function (v, k) { if (k === "idempotency_key") { key = v; } });
    }
    return key;
  }
  function sayWaiting(label) {
    var result = document.getElementById("result");
    var box = document.getElementById("pending");
    if (!result || !box) { return; }
    result.textContent = fill(box.getAttribute("data-slow") || "{entry}", { entry: label });
    result.classList.remove("ok", "err");
  }

  // A 5xx answer (the database or Redis out of reach: 503) is not swapped into the page
  // (base.html's htmx-config): say so, or the croupier would think his entry was made.
  function showUnavailable(on) {
    var el = document.getElementById("unavailable");
    if (el) { el.hidden = !on; }
  }
  // 502, 503, 504: the server, or the proxy before it, could not take the entry (the database
  // or Redis out of reach, a restart). Nothing was entered, or, after a 504, its key makes the
  // resend harmless: the entry is kept like one the network lost and sent again, in order,
  // until the server takes it. A 500 on an entry, tapped or sent by the queue, is kept aside
  // NOT CONFIRMED for the croupier (below, and answered()); the form tapped stays with its key
  // (a 5xx is not swapped in): tapped again, it is recorded once whatever the failure was.
  var UNREACHED = { 502: true, 503: true, 504: true };
  function backoff() { return Math.min(MAX_DELAY, 500 * Math.pow(2, attempt)); }
  document.addEventListener("htmx:responseError", function (evt) {
    var xhr = evt.detail.xhr;
    var cfg = evt.detail.requestConfig;
    if (xhr && UNREACHED[xhr.status] && cfg && cfg.formData && window.htmx) {
      if (isResend(evt.detail)) { return; }  // answered() keeps it first in the queue
      var values = {};
      cfg.formData.forEach(function (v, k) { values[k] = v; });
      if (values.idempotency_key) {  // an entry (a page's own reload has none: nothing to keep)
        attempt += 1;
        land(enqueue(cfg, values).id);
        flushSoon(backoff());
        return;
      }
    }
    if (xhr && xhr.status >= 500 && !UNREACHED[xhr.status] && !isResend(evt.detail) && keyOf(cfg)) {
      // A tap the server failed on (a 500): as for an entry the queue sends (answered()), it
      // may have been recorded (the panel is made after the entry is committed), so it is
      // neither "not made" nor sent again by itself: kept aside, NOT CONFIRMED, for the
      // croupier to check the table, then send it again (its key makes that safe) or discard it.
      var state = { unconfirmed: { status: xhr.status }, slow: false, flight: null };
      var kept = xhr.cheminEntry ? update(xhr.cheminEntry, function (e) {
        Object.keys(state).forEach(function (k) { e[k] = state[k]; });
      }) : null;
      if (!kept) {
        var tapped = {};
        cfg.formData.forEach(function (v, k) { tapped[k] = v; });
        update(enqueue(cfg, tapped, state).id, function (e) {  // (one kept already: the same entry)
          Object.keys(state).forEach(function (k) { e[k] = state[k]; });
        });
      }
      xhr.cheminEntry = null;  // (kept: tapDone leaves it)
      refresh();
      // The entries tapped meanwhile waited behind it (its flight): their turn now.
      if (queue.some(waiting)) { flushSoon(0); }
      return;
    }
    // (An entry the queue sent is kept for the croupier instead: answered(); a page's own
    // reload, with no entry, says the service fails.)
    if (xhr && xhr.status >= 500 && !isResend(evt.detail)) { showUnavailable(true); }
  });

  document.addEventListener("htmx:afterRequest", function (evt) {
    var xhr = evt.detail.xhr;
    // Each answer's Date renews the server's clock (a page shown again from the history
    // carries an old data-now).
    var date = xhr && xhr.status ? Date.parse(xhr.getResponseHeader("Date") || "") : NaN;
    if (date) { offset = date - Date.now(); }
    if (xhr && xhr.status && xhr.status < 500) { showUnavailable(false); }
    if (xhr && xhr.status) {
      showOffline(false);
      if (isResend(evt.detail)) { answered(xhr); }
    }
    if (xhr && xhr.cheminTap) { tapDone(xhr); }
  });

  // After a swap, move focus to the outcome so screen readers and keyboards follow.
  document.addEventListener("htmx:afterSettle", function (evt) {
    var result = document.getElementById("result");
    if (result && evt.detail.target && evt.detail.target.id === "tablet" && result.textContent.trim()) {
      result.setAttribute("tabindex", "-1");
      result.focus({ preventScroll: true });
      // A refusal must be seen: bring it into view when the page was scrolled away from it
      // (a long list of bettors). A success keeps the croupier where he is, at the next row.
      var box = result.getBoundingClientRect();
      if (result.classList.contains("err") && (box.top < 0 || box.bottom > window.innerHeight)) {
        result.scrollIntoView({ block: "start" });
      }
    }
  });
  // The floor's table cards are swapped whole, their outcome with them: a live region put in
  // the page with its words is not read out, so the focus goes to it, as on the tablet: the
  // focus the swap took away (it was in the card), not the one of a field he is typing in.
  document.addEventListener("htmx:afterSettle", function (evt) {
    var target = evt.detail.target;
    if (!target || !target.id || !target.classList.contains("table-card")) { return; }
    var card = document.getElementById(target.id);
    var outcome = card && card.querySelector(".outcome");
    if (!outcome || !outcome.textContent.trim()) { return; }
    var active = document.activeElement;
    if (active && active !== document.body && !card.contains(active)) { return; }
    outcome.setAttribute("tabindex", "-1");
    outcome.focus({ preventScroll: true });
    var box = outcome.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) { outcome.scrollIntoView({ block: "nearest" }); }
  });

  // ------------------------------------------------ cards entered faster than the network
  // The croupier enters the cards as they leave the shoe. A card tapped while the one before
  // it is still being entered (its picker is busy: htmx-request) waits, and is entered in the
  // picker of the next panel, in order, with that panel's expected count. A second tap on a
  // suit with no rank tapped since is the same card: one card. If the card before was
  // refused, or the next panel asks for no card (a declaration comes first), the waiting
  // cards are not entered, and the tablet says so.
  var waitingCards = [];
  var rankTapped = false;
  function sayCard(attr, label, err) {
    var result = document.getElementById("result");
    var panel = document.getElementById("tablet");
    if (!result || !panel) { return; }
    // A refusal of the card before stays in view: the reason it was refused comes first.
    var before = err && result.classList.contains("err") ? text(result) + " " : "";
    result.textContent = before + fill(panel.getAttribute(attr) || "{card}", { card: label });
    result.classList.toggle("err", !!err);
    result.classList.toggle("ok", !err);
  }
  document.addEventListener("click", function (evt) {
    var el = evt.target;
    if (el && el.matches && el.matches("form.picker input[name=rank]")) { rankTapped = true; }
  }, true);
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form || !form.matches || !form.matches("form.picker")) { return; }
    if (!form.classList.contains("htmx-request")) { rankTapped = false; return; }  // htmx sends it
    evt.preventDefault();
    evt.stopImmediatePropagation();
    var rank = form.querySelector("input[name=rank]:checked");
    var suit = evt.submitter;
    if (!rankTapped || !rank || !suit) { return; }  // the same card tapped twice
    rankTapped = false;
    var card = { rank: rank.value, suit: suit.value, label: rank.value + suit.textContent.trim() };
    waitingCards.push(card);
    sayCard("data-card-waiting", card.label, false);
  }, true);
  document.addEventListener("htmx:afterSettle", function (evt) {
    if (!waitingCards.length || !evt.detail.target || evt.detail.target.id !== "tablet") { return; }
    var form = document.querySelector("#tablet form.picker");
    var result = document.getElementById("result");
    var refused = result && result.classList.contains("err");
    var card = waitingCards.shift();
    var radio = form && form.querySelector("input[name=rank][value='" + card.rank + "']");
    var button = form && form.querySelector("button[name=suit][value='" + card.suit + "']");
    if (refused || !radio || !button) {
      var labels = [card.label].concat(waitingCards.map(function (c) { return c.label; }));
      waitingCards = [];
      sayCard("data-card-dropped", labels.join(", "), true);
      return;
    }
    radio.checked = true;
    rankTapped = false;
    button.click();  // a click, as a tap: htmx sends the suit of the button clicked
  });

  // ------------------------------------------------ the pages' polls
  // An element marked data-poll asks the server every 5 s what changed elsewhere (the tablet's
  // #tablet-live, the floor's cards and casino sections; 204 while nothing did). A poll is
  // not sent, and its answer not swapped, while a tap (or the queue) is on its way: that
  // answer brings the page as it is then. Nor is an answer whose element has left the page
  // meanwhile (a tap's answer replaced it): it was made before, and is older. A poll that
  // fails swaps nothing; the offline banner says it once (above), not each poll.
  var pollAnswer = false;
  function tapping() { return taps.length > 0 || !!sending || !!document.querySelector("form.htmx-request"); }
  function isPoll(elt) { return !!(elt && elt.hasAttribute && elt.hasAttribute("data-poll")); }
  function typingIn(el) {
    var active = document.activeElement;
    return !!active && active !== el && el.contains(active) && active.matches(
      "textarea, select, input:not([type=hidden]):not([type=button]):not([type=submit]):not([type=checkbox]):not([type=radio])"
    );
  }
  document.addEventListener("htmx:beforeRequest", function (evt) {
    if (isPoll(evt.detail.elt) && tapping()) { evt.preventDefault(); }
  });
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var elt = evt.detail.requestConfig && evt.detail.requestConfig.elt;
    pollAnswer = isPoll(elt);
    if (pollAnswer && (!elt.isConnected || tapping())) { evt.detail.shouldSwap = false; pollAnswer = false; }
  });
  document.addEventListener("htmx:afterRequest", function () { pollAnswer = false; });

  // A table card the server sends out of band (another table's action freed or took staff)
  // replaces the card in place; and so does a part a poll sends (above). What the Commissario was doing in it stays: a field he typed
  // in or a choice he changed (where the new card still offers it), the tools he opened, the
  // field he was in. The fields he did not touch take the server's new values.
  function changed(el) {
    if (el.tagName === "SELECT") {  // one choice: against the option the page chose
      var first = null, marked = null;
      Array.prototype.forEach.call(el.options, function (o) {
        if (o.defaultSelected) { marked = o; }
        if (!first && !o.disabled) { first = o; }
      });
      var initial = marked || first;
      return !!initial && el.value !== initial.value;
    }
    if (el.type === "checkbox" || el.type === "radio") { return el.checked !== el.defaultChecked; }
    return el.value !== el.defaultValue;
  }
  var refocus = null;
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var old = evt.detail.target;
    var fresh = evt.detail.fragment && evt.detail.fragment.firstElementChild;
    if (!old || !fresh) { return; }
    if (pollAnswer) {
      // A poll's part (a change made elsewhere): the same as on the page, or holding the field
      // he is typing in (the poll inside it still says the old state: asked again in 5 s), it
      // stays as it is; else it comes, with what he typed elsewhere in it (below).
      if (typingIn(old) || old.isEqualNode(fresh)) { evt.detail.shouldSwap = false; return; }
    } else if (!old.classList.contains("table-card")) { return; }
    old.querySelectorAll("input[id], select[id], textarea[id]").forEach(function (el) {
      if (el.type === "hidden" || !changed(el)) { return; }
      var twin = fresh.querySelector("#" + CSS.escape(el.id));
      if (!twin || twin.name !== el.name || twin.tagName !== el.tagName) { return; }
      if (el.tagName === "SELECT") {
        var offered = Array.prototype.some.call(twin.options, function (o) { return o.value === el.value; });
        if (!offered) { return; }  // taken meanwhile: the new card's choice stands
        Array.prototype.forEach.call(twin.options, function (o) { o.selected = o.value === el.value; });
      } else if (el.type === "checkbox" || el.type === "radio") {
        twin.checked = el.checked;
      } else {
        twin.value = el.value;
      }
    });
    // the tools (details) by their place in the card: the same card has the same ones
    var before = old.querySelectorAll("details"), after = fresh.querySelectorAll("details");
    if (before.length === after.length) {
      Array.prototype.forEach.call(before, function (d, i) { after[i].open = d.open; });
    }
    var active = document.activeElement;
    refocus = active && active.id && old.contains(active)
      ? { id: active.id, start: active.selectionStart, end: active.selectionEnd } : null;
  });
  document.addEventListener("htmx:oobAfterSwap", function () {
    if (!refocus) { return; }
    var el = document.getElementById(refocus.id);
    var where = refocus;
    refocus = null;
    if (!el) { return; }
    el.focus();
    if (typeof where.start === "number" && el.setSelectionRange) {
      try { el.setSelectionRange(where.start, where.end); } catch (e) { /* not a text field */ }
    }
  });

  // A refused form (a 4xx: the panel or the card comes back with the reason) keeps what was
  // typed or chosen in it: the new panel's twin of each field (same id) takes it back, and the
  // tool it was in stays open, so the croupier or the Commissario corrects the one figure the
  // reason names instead of typing it all again (a bank refused above the maximum came back
  // showing the minimum: one more tap opened that). A success leaves the server's new form.
  var refused = null;
  document.addEventListener("htmx:beforeSwap", function (evt) {
    // (detail.elt is the swap's target here: the form that was sent is the request's)
    var xhr = evt.detail.xhr, form = evt.detail.requestConfig && evt.detail.requestConfig.elt;
    refused = null;
    if (!xhr || xhr.status < 400 || xhr.status >= 500 || !form || form.tagName !== "FORM") { return; }
    refused = [];
    Array.prototype.forEach.call(form.querySelectorAll("input[id], select[id], textarea[id]"), function (el) {
      if (el.type === "hidden" || el.type === "checkbox" || el.type === "radio" || !changed(el)) { return; }
      refused.push({ id: el.id, name: el.name, tag: el.tagName, value: el.value });
    });
  });
  document.addEventListener("htmx:afterSwap", function () {
    var kept = refused;
    refused = null;
    (kept || []).forEach(function (field) {
      var twin = document.getElementById(field.id);
      if (!twin || twin.name !== field.name || twin.tagName !== field.tag) { return; }
      if (twin.tagName === "SELECT" && !Array.prototype.some.call(twin.options, function (o) {
        return o.value === field.value;
      })) { return; }  // no longer offered: the new form's choice stands
      twin.value = field.value;
      var tool = twin.closest("details");
      if (tool) { tool.open = true; }
    });
  });

  // Links inside <svg> seat maps and elements marked data-autosubmit submit their form on change.
  document.addEventListener("change", function (evt) {
    var el = evt.target;
    if (el && el.matches && el.matches("[data-autosubmit]") && el.form) { el.form.requestSubmit(); }
  });

  // Entries left from before (a reload, a closed tab, the old sessionStorage): shown at once,
  // those too old held for the croupier, and the rest sent.
  migrate();
  refresh();
  showElsewhere();
  if (queue.some(waiting)) { flushSoon(0); }
})();
