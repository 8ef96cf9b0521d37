/*
 * Sets the page up once it is parsed: loaded last, deferred, by every page
 * (templates/base.html), after common.js, figures.js and the files the page loads for
 * its own parts (tree.js, live.js, whatif.js, maxforms.js, uploads.js), whose set-up
 * runs where the page loaded them.
 */
(function () {
  "use strict";

  var D = window.dashboard;

  /* a part's set-up, where the page loaded its file */
  function optional(name) {
    if (D[name]) {
      D[name]();
    }
  }

  function start() {
    D.setupTheme();
    D.focusMessages();
    D.setupAutosubmit();
    optional("setupTree");
    D.setupRunClicks();
    optional("setupUploads");
    optional("setupMaxForms");
    optional("setupWhatif");
    D.setupScrollRegions();
    window.addEventListener("resize", D.setupScrollRegions);
    D.tickCountdowns();
    window.setInterval(D.tickCountdowns, 1000);
    window.performance.mark("dashboard:figures-start");
    D.renderFigures(document).then(function () {
      /* a figure that fills its column is re-measured once the figures beside it are drawn */
      document.querySelectorAll(".figure-tall[data-rendered]").forEach(function (el) {
        window.Plotly.Plots.resize(el);
      });
      window.performance.mark("dashboard:figures-end");
      document.documentElement.setAttribute("data-figures-rendered", "true");
      window.dashboardFiguresRenderedAt = window.performance.now();
    });
    optional("setupLive");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
