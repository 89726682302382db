// mnemon's web view: the time slider and live updates. The pages work without this script;
// it only makes them follow memory as it changes and moves through time by dragging.
(function () {
  "use strict";
  var body = document.body;
  var status = document.getElementById("live");

  // The slider: a valid time in the namespace's history ("what was true then"); the
  // transaction time ("known at") stays as the form has it.
  var slider = document.getElementById("slider");
  var shown = document.getElementById("slider-at");
  function iso(ms) {
    return new Date(Number(ms)).toISOString().replace(/\.\d{3}Z$/, "Z");
  }
  if (slider) {
    var show = function () { if (shown) { shown.textContent = iso(slider.value); } };
    show();
    slider.addEventListener("input", show);
    slider.addEventListener("change", function () {
      var url = new URL(window.location.href);
      if (Number(slider.value) >= Number(slider.max)) {
        url.searchParams.delete("as_of");
      } else {
        url.searchParams.set("as_of", iso(slider.value));
      }
      window.location.assign(url.toString());
    });
  }

  // Live: the change feed of this page's namespace (or of every namespace on the index).
  if (!window.EventSource || !status) { return; }
  var ns = body.getAttribute("data-ns");
  var live = body.getAttribute("data-live") === "1";
  var path = window.location.pathname;
  if (path.indexOf("/ui/login") === 0) { return; }
  var missed = 0;
  var pending = null;
  var source = new EventSource("/ui/events" + (ns ? "?ns=" + encodeURIComponent(ns) : ""));

  function busy() {
    var a = document.activeElement;
    return a && a.closest && a.closest("main form") !== null &&
      /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName);
  }

  function refresh(what) {
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (fresh && main) {
          var open = Array.prototype.map.call(main.querySelectorAll("details[open] summary"),
            function (s) { return s.textContent; });
          main.innerHTML = fresh.innerHTML;
          Array.prototype.forEach.call(main.querySelectorAll("details summary"), function (s) {
            if (open.indexOf(s.textContent) >= 0) { s.parentNode.open = true; }
          });
        }
        body.setAttribute("data-updates", String(Number(body.getAttribute("data-updates") || 0) + 1));
        status.textContent = "live: updated (" + what + ")";
      })
      .catch(function () { status.textContent = "live: could not refresh; reload the page"; });
  }

  source.addEventListener("change", function (e) {
    var c = {};
    try { c = JSON.parse(e.data); } catch (err) { return; }
    var what = c.op + " " + (c.kind || "record") + (ns ? "" : " in " + c.namespace);
    if (!live) {
      missed += 1;
      status.textContent = "as of the past: " + missed + " change(s) since (latest: " + what + ")";
      return;
    }
    if (busy()) {
      status.textContent = "live: memory changed (" + what + "); finish your edit, then reload";
      return;
    }
    if (pending) { clearTimeout(pending); }
    pending = setTimeout(function () { pending = null; refresh(what); }, 150);
  });
  source.addEventListener("open", function () {
    body.setAttribute("data-connected", "1");
  });
})();
