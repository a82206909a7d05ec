/* Chemin: retry a form post on network failure with the SAME idempotency key, and show
   an "offline" banner while the network is down. No inline script anywhere (CSP). */
(function () {
  "use strict";
  var MAX_DELAY = 15000;
  var banner = function () { return document.getElementById("offline"); };
  function showOffline(on) {
    var el = banner();
    if (el) { el.hidden = !on; }
    document.body.classList.toggle("is-offline", !!on);
  }

  window.addEventListener("offline", function () { showOffline(true); });
  window.addEventListener("online", function () { showOffline(false); });

  document.addEventListener("htmx:sendError", function (evt) {
    var cfg = evt.detail.requestConfig;
    if (!cfg || !window.htmx) { return; }
    showOffline(true);
    // The key is in the form's hidden field: sending the very same values again means a
    // request that reached the server before the network dropped is answered from the
    // stored answer, never entered twice.
    var values = {};
    cfg.formData.forEach(function (v, k) { values[k] = v; });
    var attempt = (cfg.elt.__cheminRetry || 0) + 1;
    cfg.elt.__cheminRetry = attempt;
    var delay = Math.min(MAX_DELAY, 500 * Math.pow(2, attempt));
    window.setTimeout(function () {
      window.htmx.ajax(cfg.verb, cfg.path, {
        source: cfg.elt, target: cfg.target, swap: "outerHTML", values: values
      });
    }, delay);
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
      if (evt.detail.elt) { evt.detail.elt.__cheminRetry = 0; }
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
})();
