/*
 * Plotly figures embedded with json_script (or fetched as JSON), drawn in the current
 * theme: in page order, the page's main figure first; a big tree first with only the
 * levels shown; on the tree page, the tree drawn while the page is still parsed
 * (data-draw-early: this file and common.js are loaded in place there, not deferred).
 * Hover text sent compact is joined back from the server's escaped pieces, as text.
 * Needs common.js; every page loads it. Also the history timeline's click to a run.
 */
(function () {
  "use strict";

  var D = window.dashboard;
  var readJSON = D.readJSON;

  /* The mode bar holds one button (a PNG of the figure): one Tab stop per figure, and
     nothing that sends a figure off this machine (plotly.js offers a "send to cloud"
     button unless told not to). Zooming stays on the mouse: drag, double-click resets. */
  var PLOT_CONFIG = {
    responsive: true,
    displaylogo: false,
    displayModeBar: "hover",
    showSendToCloud: false,
    showEditInChartStudio: false,
    plotlyServerURL: "",
    modeBarButtons: [["toImage"]],
  };

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function themeLayout() {
    var fg = cssVar("--fg") || "#1f2933";
    var grid = cssVar("--grid") || "#e4e7eb";
    return {
      "font.color": fg,
      "xaxis.gridcolor": grid,
      "yaxis.gridcolor": grid,
      "hoverlabel.bgcolor": cssVar("--surface") || "#fff",
      "hoverlabel.bordercolor": cssVar("--border") || "#ccc",
      "hoverlabel.font.color": fg,
    };
  }

  function applyTheme(layout) {
    var t = themeLayout();
    layout.font = Object.assign({}, layout.font || {}, { color: t["font.color"] });
    layout.hoverlabel = Object.assign({}, layout.hoverlabel || {}, {
      bgcolor: t["hoverlabel.bgcolor"],
      bordercolor: t["hoverlabel.bordercolor"],
      font: Object.assign({}, (layout.hoverlabel || {}).font || {}, { color: t["font.color"] }),
    });
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        layout[key] = Object.assign({}, layout[key], { gridcolor: t["xaxis.gridcolor"], zerolinecolor: t["xaxis.gridcolor"] });
      }
    });
    return layout;
  }

  /* ------------------------------------------------------------------ figures */

  var figures = [];

  /* A figure whose hover text came compact (dashboard/charts/compact.py: the
     server's distinct pieces, already escaped, and per point its lines as piece
     indexes): join the pieces back into hovertext, " · " within a line, "<br>"
     between lines. Text only: no markup is made here. */
  function expandHover(figure) {
    var compact = figure.compactHover;
    if (!compact) {
      return figure;
    }
    var parts = compact.parts;
    function textOf(row) {
      var lines = [];
      for (var i = 0; i < row.length; i++) {
        var pieces = [];
        for (var j = 0; j < row[i].length; j++) {
          pieces.push(parts[row[i][j]]);
        }
        lines.push(pieces.join(" \u00b7 "));
      }
      return lines.join("<br>");
    }
    Object.keys(compact.traces || {}).forEach(function (index) {
      var trace = figure.data[Number(index)];
      if (trace) {
        trace.hovertext = compact.traces[index].map(textOf);
      }
    });
    /* a heatmap's grid: one list of texts per row of cells */
    Object.keys(compact.grids || {}).forEach(function (index) {
      var trace = figure.data[Number(index)];
      if (trace) {
        trace.hovertext = compact.grids[index].map(function (cells) {
          return cells.map(textOf);
        });
      }
    });
    delete figure.compactHover;
    return figure;
  }

  function renderFigure(el, figure) {
    if (!window.Plotly || !figure) {
      return Promise.resolve(null);
    }
    expandHover(figure);
    var layout = applyTheme(figure.layout || {});
    return window.Plotly.react(el, figure.data || [], layout, PLOT_CONFIG).then(function (gd) {
      el.setAttribute("data-rendered", "true");
      if (figures.indexOf(el) < 0) {
        figures.push(el);
      }
      el.dispatchEvent(new CustomEvent("figure:rendered", { bubbles: true }));
      return gd;
    });
  }

  /* The icicle builds, styles and measures a box for every queue, also for those
     deeper than the levels shown (it squeezes them to nothing): with 1,000 queues
     and 3 levels shown, most of its drawing time. So the first draw of the tree
     keeps only the boxes shown, each sized as in the whole tree (its number of
     leaves, which is what the icicle sizes a box by when it has no values), and
     the whole tree replaces it once the page is painted. Null when nothing is
     hidden (all levels shown, or a figure this does not apply to). */
  function visiblePart(figure) {
    var trace = figure && figure.data && figure.data[0];
    if (!trace || figure.data.length !== 1 || trace.type !== "icicle" || trace.values || !(trace.maxdepth > 0)) {
      return null;
    }
    var ids = trace.ids || [];
    var parents = trace.parents || [];
    var n = ids.length;
    var at = {};
    var kids = {};
    var roots = [];
    for (var i = 0; i < n; i++) {
      at[ids[i]] = i;
    }
    for (i = 0; i < n; i++) {
      if (parents[i] && Object.prototype.hasOwnProperty.call(at, parents[i])) {
        (kids[parents[i]] = kids[parents[i]] || []).push(i);
      } else {
        roots.push(i);
      }
    }
    if (roots.length !== 1) {
      return null;
    }
    var leaves = new Array(n);
    function countLeaves(index) {
      var below = kids[ids[index]];
      var count = 0;
      if (!below) {
        count = 1;
      } else {
        for (var k = 0; k < below.length; k++) {
          count += countLeaves(below[k]);
        }
      }
      leaves[index] = count;
      return count;
    }
    countLeaves(roots[0]);
    var entry = trace.level && Object.prototype.hasOwnProperty.call(at, trace.level) ? at[trace.level] : roots[0];
    var keep = new Array(n);
    for (var up = entry; up !== undefined; up = at[parents[up]]) {
      keep[up] = true; /* the zoomed-into queue and its ancestors */
    }
    var shown = 1;
    var level = [entry];
    for (var d = 1; d < trace.maxdepth && level.length; d++) {
      var deeper = [];
      level.forEach(function (index) {
        (kids[ids[index]] || []).forEach(function (child) {
          keep[child] = true;
          deeper.push(child);
        });
      });
      shown += deeper.length;
      level = deeper;
    }
    var kept = [];
    for (i = 0; i < n; i++) {
      if (keep[i]) {
        kept.push(i);
      }
    }
    if (kept.length === n) {
      return null;
    }
    function pick(values) {
      return Array.isArray(values) && values.length === n
        ? kept.map(function (index) {
            return values[index];
          })
        : values;
    }
    var part = {};
    Object.keys(trace).forEach(function (key) {
      part[key] = pick(trace[key]);
    });
    var marker = trace.marker || {};
    part.marker = {};
    Object.keys(marker).forEach(function (key) {
      part.marker[key] = pick(marker[key]);
    });
    if (marker.line) {
      part.marker.line = {};
      Object.keys(marker.line).forEach(function (key) {
        part.marker.line[key] = pick(marker.line[key]);
      });
    }
    part.values = pick(leaves);
    part.branchvalues = "total";
    return { data: [part], layout: figure.layout, shown: shown };
  }

  /* Resolved once every tree on the page holds its whole hierarchy: zooming,
     searching and changing the levels shown wait for it. */
  var wholeTrees = Promise.resolve();

  /* The page's main figure drawn while the rest of the page is still being parsed.
     A page that marks its figure data-draw-early loads plotly.js, common.js and this
     file right after that figure's element (not deferred): the figure is drawn then, as
     renderFigures would draw it first (in part, for a data-part-first tree), instead
     of after the whole page is parsed (the tree page's queue list is half its HTML).
     renderFigures then goes on from it. The grid the figure sits in does not size its
     columns by their content, so the figure's width is already the final one. */
  var early = null;

  function drawEarly() {
    var el = document.querySelector("[data-draw-early][data-figure]");
    if (!el || !window.Plotly) {
      return;
    }
    var figure = readJSON(el.getAttribute("data-figure"));
    if (!figure) {
      return; /* nothing to draw: renderFigures sees to the element as before */
    }
    early = drawFirst(el, figure);
    early.el = el;
  }

  /* A figure's first draw: only the boxes shown, for a data-part-first tree (its
     whole hierarchy is drawn later). {figure, part (null when the figure was drawn
     whole), drawn (resolved once drawn)}. */
  function drawFirst(el, figure) {
    var part = el.hasAttribute("data-part-first") && window.Plotly ? visiblePart(expandHover(figure)) : null;
    return {
      figure: figure,
      part: part,
      drawn: renderFigure(el, part || figure).then(function () {
        el.setAttribute("data-rendered-at", String(Math.round(window.performance.now())));
        if (!part && el.hasAttribute("data-part-first")) {
          el.setAttribute("data-whole", "true"); /* nothing was left out */
        }
      }),
    };
  }

  /* One figure after the other, in page order, yielding between them so that the
     browser paints the first one (the page's main figure) before drawing the rest.
     A region marked data-figures-after-paint (a what-if answer: its text is the
     answer, its figures illustrate it) is painted before its first figure is drawn.
     A tree marked data-part-first is drawn in part first (visiblePart), whole last,
     after a paint.
     *source* (optional) holds the figures by element id (an answer fetched as JSON);
     without it, each figure is read from its json_script element. */
  function renderFigures(root, source) {
    var elements = Array.prototype.slice.call((root || document).querySelectorAll("[data-figure]"));
    var later = [];
    var done;
    var finished = new Promise(function (resolve) {
      done = resolve;
    });
    function whole() {
      var item = later.shift();
      if (!item) {
        done();
        return;
      }
      var current = item.el.data && item.el.data[0];
      var trace = item.figure.data[0];
      if (current) {
        /* where the reader zoomed meanwhile */
        trace.level = current.level;
      }
      renderFigure(item.el, item.figure).then(function () {
        item.el.setAttribute("data-whole", "true");
        item.el.setAttribute("data-whole-at", String(Math.round(window.performance.now())));
        window.setTimeout(whole, 0);
      });
    }
    function next() {
      var el = elements.shift();
      if (!el) {
        if (!later.length) {
          done();
          return;
        }
        window.requestAnimationFrame(function () {
          window.setTimeout(whole, 0); /* after the frame is painted */
        });
        return;
      }
      var first;
      if (early && early.el === el && !source) {
        first = early; /* drawn while the page was parsed */
        early = null;
      } else {
        var id = el.getAttribute("data-figure");
        first = drawFirst(el, source ? source[id] || null : readJSON(id));
      }
      if (first.part) {
        later.push({ el: el, figure: first.figure });
      }
      first.drawn.then(function () {
        window.setTimeout(next, 0);
      });
    }
    if ((root || document).querySelector("[data-figures-after-paint]")) {
      window.requestAnimationFrame(function () {
        window.setTimeout(next, 0); /* after the frame is painted */
      });
    } else {
      next();
    }
    wholeTrees = wholeTrees.then(function () {
      return finished;
    });
    return finished;
  }

  function rethemeFigures() {
    figures.forEach(function (el) {
      if (el.isConnected && el.layout) {
        window.Plotly.relayout(el, applyTheme(Object.assign({}, el.layout)));
      }
    });
  }

  /* ------------------------------------------------------------------ history clicks */

  function setupRunClicks() {
    document.querySelectorAll("[data-run-url]").forEach(function (el) {
      el.addEventListener("figure:rendered", function () {
        if (el.getAttribute("data-click-bound")) return;
        el.setAttribute("data-click-bound", "true");
        el.on("plotly_click", function (ev) {
          var id = ev && ev.points && ev.points.length ? ev.points[0].customdata : null;
          if (id !== null && id !== undefined) {
            window.location.assign(el.getAttribute("data-run-url").replace(/0\/?$/, String(id) + "/"));
          }
        });
      });
    });
  }

  D.renderFigure = renderFigure;
  D.renderFigures = renderFigures;
  D.rethemeFigures = rethemeFigures;
  D.setupRunClicks = setupRunClicks;
  /* The promise resolved once every tree on the page holds its whole hierarchy (it
     changes as figures are drawn: asked for each time). */
  D.wholeTrees = function () {
    return wholeTrees;
  };

  if (document.readyState === "loading") {
    /* loaded in the page, not deferred: the figure marked data-draw-early is there */
    drawEarly();
  }
})();
