/* Chemin: entries posted while the network is down wait in a page-level queue and are sent
   again, in the order they were made, each with its own idempotency key, once the network is
   back; an "offline" banner shows while it is down. No inline script anywhere (CSP). */
(function () {
  "use strict";
  var MAX_DELAY = 15000;
  var QUEUED = "X-Chemin-Queued";  // marks a resend of the queue (the server ignores it)
  var banner = function () { return document.getElementById("offline"); };
  function showOffline(on) {
    var el = banner();
    if (el) { el.hidden = !on; }
    document.body.classList.toggle("is-offline", !!on);
  }

  window.addEventListener("offline", function () { showOffline(true); });
  window.addEventListener("online", function () { showOffline(false); flushSoon(0); });

  // ----------------------------------------------------------------- the queue of entries
  // One queue per user and table (the panel's data-queue), kept in sessionStorage so that a
  // reload does not drop an entry. Every entry keeps the idempotency key of the form it was
  // made in: sending it again, even after it reached the server before the network dropped,
  // is answered from the stored answer, never entered twice.
  function storageKey() {
    var el = document.querySelector("[data-queue]");
    return "chemin:pending:" + (el ? el.getAttribute("data-queue") : window.location.pathname);
  }
  var STORE = storageKey();  // once: a refusal page swapped in later has no panel to ask
  function load() {
    try { return JSON.parse(window.sessionStorage.getItem(STORE) || "[]") || []; }
    catch (e) { return []; }
  }
  function save(queue) {
    try {
      if (queue.length) { window.sessionStorage.setItem(STORE, JSON.stringify(queue)); }
      else { window.sessionStorage.removeItem(STORE); }
    } catch (e) { /* storage full or refused: the queue still lives in this page */ }
  }
  var queue = load();
  var sending = null;   // the entry on its way to the server
  var attempt = 0;      // network failures in a row: the next try waits longer
  var timer = null;

  function text(el) { return el ? (el.textContent || "").replace(/\s+/g, " ").trim() : ""; }
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
    if (custom && custom.value && button && button.value === "custom") { parts.push("€ " + custom.value); }
    var how = parts.filter(Boolean).join(" ");
    return what && how ? what + ": " + how : (what || how || cfg.path);
  }

  function sameValues(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

  function enqueue(cfg, values) {
    var key = values.idempotency_key || "";
    var twice = queue.some(function (e) { return key && e.key === key && sameValues(e.values, values); });
    if (!twice) {  // a second tap on the very same entry is the same entry
      queue.push({
        url: cfg.path, verb: cfg.verb, values: values, key: key, label: labelFor(cfg),
        target: cfg.target && cfg.target.id ? "#" + cfg.target.id : "#tablet"
      });
      save(queue);
    }
    showPending();
  }

  function csrfToken() {
    var el = document.querySelector("input[name=csrfmiddlewaretoken]");
    return el ? el.value : null;
  }

  function flushSoon(delay) {
    if (timer) { window.clearTimeout(timer); }
    timer = window.setTimeout(function () { timer = null; flush(); }, delay);
  }

  function flush() {
    if (sending || !queue.length || !window.htmx) { return; }
    sending = queue[0];
    var values = {};
    Object.keys(sending.values).forEach(function (k) { values[k] = sending.values[k]; });
    // The token of the page as it is now (not fingerprinted): a reload or a new login renewed it.
    var token = csrfToken();
    if (token && "csrfmiddlewaretoken" in values) { values.csrfmiddlewaretoken = token; }
    var headers = {};
    headers[QUEUED] = sending.key || "1";
    var target = document.querySelector(sending.target) || document.getElementById("tablet");
    var swap = "outerHTML";
    if (!target) {  // a refusal page took the panel's place: the answer goes where it was
      target = document.getElementById("main") || document.body;
      swap = "innerHTML";
    }
    var sent = window.htmx.ajax(sending.verb, sending.url, {
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

  function answered(xhr) {
    var entry = sending;
    sending = null;
    attempt = 0;
    if (xhr.getResponseHeader("HX-Redirect")) {
      // Logged out meanwhile: nothing was entered. The entries stay queued for this user and
      // table, and go once he is back on its page after logging in.
      return;
    }
    queue = queue.filter(function (e) { return !(e.key === entry.key && sameValues(e.values, entry.values)); });
    save(queue);
    var ok = xhr.status < 400;
    var reason = serverMessage(xhr);
    if (!ok && !reason) { reason = String(xhr.status); }
    report(entry, ok, reason);
    showPending();
    if (queue.length) { flushSoon(0); }
  }

  // ----------------------------------------------------------------- what the user sees
  function showPending() {
    var box = document.getElementById("pending");
    if (!box) { return; }
    if (!queue.length) { box.hidden = true; box.textContent = ""; return; }
    var head = fill(box.getAttribute(queue.length === 1 ? "data-one" : "data-many") || "{n}", { n: queue.length });
    box.textContent = "";
    var p = document.createElement("p");
    p.textContent = head;
    var list = document.createElement("ol");
    queue.forEach(function (e) {
      var li = document.createElement("li");
      li.textContent = e.label;
      list.appendChild(li);
    });
    box.appendChild(p);
    box.appendChild(list);
    box.hidden = false;
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

  // ----------------------------------------------------------------- htmx
  // While entries wait, a new one joins the end of the queue instead of overtaking them.
  document.addEventListener("htmx:configRequest", function (evt) {
    var d = evt.detail;
    if (!queue.length || (d.headers && d.headers[QUEUED]) || String(d.verb).toLowerCase() === "get") { return; }
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
    if (isResend(evt.detail)) {  // still down: try again later, the entry stays first
      sending = null;
      attempt += 1;
      flushSoon(Math.min(MAX_DELAY, 500 * Math.pow(2, attempt)));
      return;
    }
    var values = {};
    cfg.formData.forEach(function (v, k) { values[k] = v; });
    enqueue(cfg, values);
    attempt += 1;
    flushSoon(Math.min(MAX_DELAY, 500 * Math.pow(2, attempt)));
  });

  // A 5xx answer (the database or Redis out of reach: 503) is not swapped into the page
  // (base.html's htmx-config): say so, or the croupier would think his entry was made.
  function showUnavailable(on) {
    var el = document.getElementById("unavailable");
    if (el) { el.hidden = !on; }
  }
  document.addEventListener("htmx:responseError", function (evt) {
    var xhr = evt.detail.xhr;
    if (xhr && xhr.status >= 500) { showUnavailable(true); }
  });

  document.addEventListener("htmx:afterRequest", function (evt) {
    var xhr = evt.detail.xhr;
    if (xhr && xhr.status && xhr.status < 500) { showUnavailable(false); }
    if (xhr && xhr.status) {
      showOffline(false);
      if (isResend(evt.detail)) { answered(xhr); }
    }
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

  // Links inside <svg> seat maps and elements marked data-autosubmit submit their form on change.
  document.addEventListener("change", function (evt) {
    var el = evt.target;
    if (el && el.matches && el.matches("[data-autosubmit]") && el.form) { el.form.requestSubmit(); }
  });

  // Entries left from before a reload: shown at once, and sent.
  showPending();
  if (queue.length) { flushSoon(0); }
})();
