/*
 * The pages' small progressive script (no framework), one file per concern; every
 * page loads common.js, figures.js and, last, start.js, and a page loads the others
 * it needs between them (templates/base.html, block page_scripts):
 *  - common.js (this file): the shared namespace (window.dashboard), the light / dark
 *    toggle (stored in localStorage), the scope selects that submit themselves, live
 *    countdowns for scheduled changes, tables that scroll sideways made reachable,
 *    the focus after a form post;
 *  - figures.js: Plotly figures embedded with json_script, drawn in the current theme;
 *  - tree.js: the queue tree (click or search a queue, collapse levels, per-queue bars);
 *  - live.js: live refresh of [data-live] regions while a run or timer is in progress;
 *  - whatif.js: what-if forms answered in place (fetch, the answer alone, its URL pushed);
 *  - maxforms.js: the max in force of the chosen queue, old -> new per type,
 *    "unlimited" as an explicit box and a confirmation when a limit is removed;
 *  - uploads.js: upload progress for imports;
 *  - start.js: sets everything up, in one order, once the page is parsed.
 * The files share window.dashboard: each adds its functions there, and a call into a
 * file that not every page loads checks that the function is there.
 * Everything user-provided is inserted with textContent, never innerHTML, except
 * for whole regions taken from our own server-rendered (escaped) HTML.
 */
(function () {
  "use strict";

  var D = (window.dashboard = window.dashboard || {});

  var THEME_KEY = "dashboard-theme";

  function readJSON(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  /* ------------------------------------------------------------------ theme */

  function setupTheme() {
    var button = document.getElementById("theme-toggle");
    if (!button) {
      return;
    }
    button.addEventListener("click", function () {
      var next = document.documentElement.getAttribute("data-theme") === "dark" ? "light" : "dark";
      document.documentElement.setAttribute("data-theme", next);
      try {
        window.localStorage.setItem(THEME_KEY, next);
      } catch (e) {
        /* private mode: the choice lasts for this page only */
      }
      D.rethemeFigures(); /* figures.js */
    });
  }

  /* ------------------------------------------------------------------ small forms */

  function setupAutosubmit() {
    document.querySelectorAll("form[data-autosubmit]").forEach(function (form) {
      form.querySelectorAll("select").forEach(function (select) {
        select.addEventListener("change", function () {
          if (select.name === "partition" || select.name === "cluster") {
            var snap = form.querySelector("select[name=snapshot]");
            if (snap) {
              snap.disabled = true; /* a new partition starts at its newest snapshot */
            }
          }
          if (select.name === "cluster") {
            var part = form.querySelector("select[name=partition]");
            if (part) {
              part.disabled = true; /* a new cluster starts at its newest snapshot's partition */
            }
          }
          form.submit();
        });
      });
    });
  }

  /* ------------------------------------------------------------------ countdowns */

  function formatLeft(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    var d = Math.floor(s / 86400);
    var h = Math.floor((s % 86400) / 3600);
    var m = Math.floor((s % 3600) / 60);
    var sec = s % 60;
    var parts = [];
    if (d) parts.push(d + "d");
    if (h) parts.push(h + "h");
    if (m || h || d) parts.push(m + "m");
    parts.push(sec + "s");
    return parts.join(" ");
  }

  function tickCountdowns() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var deadline = Date.parse(el.getAttribute("data-deadline"));
      if (isNaN(deadline)) {
        return;
      }
      var left = deadline - now;
      el.textContent = left > 0 ? "in " + formatLeft(left) : "due now";
      el.classList.toggle("due", left <= 0);
    });
  }

  /* ------------------------------------------------------------------ scrolled tables */

  /* A table wider than its box scrolls: make the box reachable by keyboard, named. */
  /* The heading a table box follows (the nearest one before it in its section), so that two
     tables of one section get two names (two regions with one name are one landmark twice). */
  function tableHeading(box) {
    for (var el = box.previousElementSibling; el; el = el.previousElementSibling) {
      if (/^H[2-4]$/.test(el.tagName)) return el;
    }
    var section = box.closest("section");
    return section ? section.querySelector("h2, h3") : null;
  }

  function setupScrollRegions() {
    var used = {};
    document.querySelectorAll(".table-wrap[role=region]").forEach(function (box) {
      used[box.getAttribute("aria-label")] = true;
    });
    document.querySelectorAll(".table-wrap").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        var heading = tableHeading(box);
        var label = (heading ? heading.textContent.trim() : "Table") + " (scrolls sideways)";
        for (var n = 2; used[label]; n++) label = label.replace(/( \d+)?$/, " " + n);
        used[label] = true;
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", label);
      } else if (!scrolls && box.getAttribute("role") === "region") {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  }

  /* ------------------------------------------------------------------ focus */

  /* After a form post the focus is where the reader acts next (read out, and the next
     Tab continues from it), not the top of the page: a refused form's first error, else
     the page's message, else the result the post shows (a plan's summary). */
  function focusMessages() {
    if (document.activeElement && document.activeElement !== document.body) {
      return;
    }
    var target = document.querySelector("main [data-form-error], main .errorlist") ||
      document.querySelector("[data-messages]") ||
      document.querySelector("[data-focus-result]");
    if (!target) {
      return;
    }
    if (!target.hasAttribute("tabindex")) {
      target.setAttribute("tabindex", "-1");
    }
    target.focus({ preventScroll: false });
  }

  D.readJSON = readJSON;
  D.setupTheme = setupTheme;
  D.setupAutosubmit = setupAutosubmit;
  D.tickCountdowns = tickCountdowns;
  D.setupScrollRegions = setupScrollRegions;
  D.focusMessages = focusMessages;
})();
