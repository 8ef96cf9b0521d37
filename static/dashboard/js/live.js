/*
 * Live refresh of a page's [data-live] regions while a run or a timer is in progress
 * (data-live-active): a long poll for one run (data-live-wait), else a periodic
 * refresh (the body's data-refresh-ms), each region swapped for the server's fresh,
 * escaped HTML. Loaded by the pages with live regions (what-if, history, run, queue,
 * changes, change). Needs common.js and figures.js.
 */
(function () {
  "use strict";

  var D = window.dashboard;
  var renderFigures = D.renderFigures;
  var setupScrollRegions = D.setupScrollRegions;
  var tickCountdowns = D.tickCountdowns;

  /* maxforms.js: loaded by the pages whose live regions hold a max form */
  function setupMaxForms() {
    if (D.setupMaxForms) {
      D.setupMaxForms();
    }
  }

  /* whatif.js: the what-if page's answer region (null on other pages) and its answer */
  function answerRegion() {
    return D.answerRegion ? D.answerRegion() : null;
  }

  function loadAnswer(run, push) {
    return D.loadAnswer(run, push);
  }

  var liveTimer = null;

  function liveActive(doc) {
    return !!doc.querySelector("[data-live-active]");
  }

  function refreshLive() {
    if (document.hidden) {
      return; /* nobody is looking: skip this tick */
    }
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Live-Refresh": "1" } })
      .then(function (r) {
        return r.ok ? r.text() : null;
      })
      .then(function (text) {
        if (text === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (region) {
          var fresh = region.id ? doc.getElementById(region.id) : null;
          if (fresh && fresh.innerHTML !== region.innerHTML) {
            region.innerHTML = fresh.innerHTML;
            Array.prototype.slice.call(fresh.attributes).forEach(function (a) {
              region.setAttribute(a.name, a.value);
            });
            renderFigures(region);
            setupMaxForms();
            setupScrollRegions();
          }
        });
        var badge = doc.getElementById("nav-alerts");
        var mine = document.getElementById("nav-alerts");
        if (badge && mine && badge.innerHTML !== mine.innerHTML) {
          mine.innerHTML = badge.innerHTML;
        }
        tickCountdowns();
        if (!liveActive(doc)) {
          stopLive();
        }
      })
      .catch(function () {
        /* network hiccup: the next tick tries again */
      });
  }

  function stopLive() {
    if (liveTimer !== null) {
      window.clearInterval(liveTimer);
      liveTimer = null;
    }
    document.documentElement.removeAttribute("data-live-polling");
  }

  /* A page waiting for one run (data-live-wait: its long-poll URL) asks the server to
     answer when the run is finished, and refreshes right then; a timed-out wait is
     asked again; an error falls back to the periodic refresh. */
  function waitForRun(url) {
    document.documentElement.setAttribute("data-live-waiting", "true");
    var asked = new URL(url, window.location.href);
    asked.searchParams.set("timeout", "15");
    fetch(asked.toString(), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) {
          throw new Error("wait answered " + r.status);
        }
        return r.json();
      })
      .then(function (answer) {
        if (answer.finished) {
          document.documentElement.removeAttribute("data-live-waiting");
          var region = answerRegion();
          if (region) {
            /* the what-if page: its answer alone (unless another question came since) */
            if (region.getAttribute("data-run") === String(answer.run)) {
              loadAnswer(answer.run, false);
            }
            return;
          }
          /* the periodic refresh stays as a fallback (a hidden tab skips refreshes)
             until a refresh shows the run finished and stops it */
          startPolling();
          refreshLive();
        } else if (!answerRegion() || answerRegion().getAttribute("data-run") === String(answer.run)) {
          waitForRun(url);
        }
      })
      .catch(function () {
        document.documentElement.removeAttribute("data-live-waiting");
        startPolling();
      });
  }

  function startPolling() {
    var everyMs = parseInt(document.body.getAttribute("data-refresh-ms") || "2000", 10);
    document.documentElement.setAttribute("data-live-polling", "true");
    liveTimer = window.setInterval(refreshLive, everyMs);
  }

  function setupLive() {
    if (!liveActive(document)) {
      return;
    }
    var waiter = document.querySelector("[data-live-wait]");
    if (waiter && window.fetch && window.URL) {
      waitForRun(waiter.getAttribute("data-live-wait"));
      return;
    }
    startPolling();
  }

  D.setupLive = setupLive;
  D.waitForRun = waitForRun;
})();
