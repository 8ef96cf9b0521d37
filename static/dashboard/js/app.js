/*
 * The pages' small progressive script (no framework):
 *  - renders Plotly figures embedded with json_script, in the current theme;
 *  - the light / dark toggle (stored in localStorage);
 *  - the queue tree: click or search a queue, collapse levels, per-queue bars;
 *  - live countdowns for scheduled changes;
 *  - live refresh of [data-live] regions while a run or timer is in progress;
 *  - what-if forms answered in place (fetch, the answer alone, its URL pushed);
 *  - upload progress for imports;
 *  - max forms: the max in force of the chosen queue, old -> new per type,
 *    "unlimited" as an explicit box and a confirmation when a limit is removed.
 * Everything user-provided is inserted with textContent, never innerHTML, except
 * for whole regions taken from our own server-rendered (escaped) HTML.
 */
(function () {
  "use strict";

  var THEME_KEY = "dashboard-theme";
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

  function readJSON(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
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
     A page that marks its figure data-draw-early loads plotly.js and this script
     right after that figure's element (not deferred): the figure is drawn then, as
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
      rethemeFigures();
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

  /* ------------------------------------------------------------------ queue tree */

  function setupTree() {
    var tree = document.querySelector("[data-tree]");
    if (!tree) {
      return;
    }
    var bars = document.querySelector("[data-bars]");
    var barsUrl = tree.getAttribute("data-bars-url");
    var detailLink = document.getElementById("queue-detail-link");
    var victimsLink = document.getElementById("queue-victims-link");
    var selectedLabel = document.getElementById("selected-queue");
    var searchForm = document.getElementById("tree-search");
    var searchInput = document.getElementById("tree-search-input");
    var searchNote = document.getElementById("tree-search-note");
    var depthSelect = document.getElementById("tree-depth");

    function setParam(name, value) {
      var url = new URL(window.location.href);
      if (value === null || value === "") {
        url.searchParams.delete(name);
      } else {
        url.searchParams.set(name, value);
      }
      window.history.replaceState(null, "", url.toString());
      return url;
    }

    function linkWith(a, path) {
      if (!a) {
        return;
      }
      var url = new URL(a.href, window.location.href);
      url.searchParams.set("queue", path);
      a.href = url.toString();
    }

    /* Each drill-down is a URL and a history entry: back and forward retrace them. */
    function pushQueue(path) {
      var url = new URL(window.location.href);
      if (url.searchParams.get("queue") === path) {
        return;
      }
      url.searchParams.set("queue", path);
      window.history.pushState({ queue: path }, "", url.toString());
    }

    function markCurrent(path) {
      document.querySelectorAll(".queue-link").forEach(function (a) {
        var on = a.getAttribute("data-queue") === path;
        a.classList.toggle("current", on);
        if (on) {
          a.setAttribute("aria-current", "true");
        } else {
          a.removeAttribute("aria-current");
        }
      });
    }

    var barsAsked = 0; /* the bars asked for last (each selection asks) */

    function select(path, fromHistory) {
      if (!fromHistory) {
        pushQueue(path);
      }
      markCurrent(path);
      if (selectedLabel) {
        selectedLabel.textContent = path;
      }
      linkWith(detailLink, path);
      linkWith(victimsLink, path);
      if (bars && barsUrl) {
        var url = new URL(barsUrl, window.location.href);
        new URL(window.location.href).searchParams.forEach(function (v, k) {
          url.searchParams.set(k, v);
        });
        url.searchParams.set("queue", path); /* the page's own URL may not name it (back to the start) */
        bars.setAttribute("aria-busy", "true");
        var asked = ++barsAsked;
        fetch(url.toString(), { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(function (r) {
            return r.ok ? r.json() : null;
          })
          .then(function (fig) {
            if (asked !== barsAsked) {
              return; /* a later selection's bars are on their way: an earlier answer never overwrites them */
            }
            bars.removeAttribute("aria-busy");
            if (fig) {
              renderFigure(bars, fig);
            }
          });
      }
    }

    /* A leaf cannot be zoomed into (plotly.js draws NaN paths): zoom to its parent. */
    function zoomTarget(id) {
      var trace = tree.data && tree.data[0];
      if (!trace) {
        return id;
      }
      var isParent = trace.parents.indexOf(id) >= 0;
      if (isParent) {
        return id;
      }
      var index = trace.ids.indexOf(id);
      return index >= 0 && trace.parents[index] ? trace.parents[index] : id;
    }

    var crumbs = document.getElementById("tree-crumbs");

    /* "root › research › nlp": where the icicle is zoomed; each part zooms there. */
    function showLevel(level) {
      if (!crumbs) {
        return;
      }
      crumbs.textContent = "";
      var parts = (level || "root").split(".");
      parts.forEach(function (name, i) {
        var path = parts.slice(0, i + 1).join(".");
        if (i > 0) {
          crumbs.appendChild(document.createTextNode(" \u203a "));
        }
        var a = document.createElement("a");
        a.href = "#";
        a.textContent = name;
        a.addEventListener("click", function (ev) {
          ev.preventDefault();
          goTo(path, false);
        });
        crumbs.appendChild(a);
      });
    }

    function onFirst() {
      tree.removeEventListener("figure:rendered", onFirst);
      showLevel(tree.data[0].level);
      tree.on("plotly_click", function (ev) {
        if (ev && ev.points && ev.points.length) {
          select(ev.points[0].id);
          if (ev.nextLevel !== undefined) {
            showLevel(ev.nextLevel);
          }
        }
      });
    }
    if (tree.hasAttribute("data-rendered")) {
      onFirst(); /* drawn early, before this ran */
    } else {
      tree.addEventListener("figure:rendered", onFirst);
    }

    function goTo(path, fromHistory) {
      wholeTrees.then(function () {
        zoom(path, fromHistory);
      });
    }

    function zoom(path, fromHistory) {
      var target = zoomTarget(path);
      if (tree.data) {
        window.Plotly.restyle(tree, { level: [target] });
      }
      showLevel(target);
      select(path, fromHistory);
    }

    window.addEventListener("popstate", function () {
      var path = new URL(window.location.href).searchParams.get("queue") || "root";
      goTo(path, true);
    });

    document.querySelectorAll(".queue-link").forEach(function (a) {
      a.addEventListener("click", function (ev) {
        if (ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) {
          return; /* a new tab or window gets the plain link */
        }
        ev.preventDefault();
        goTo(a.getAttribute("data-queue"), false);
      });
    });

    if (searchForm && searchInput) {
      searchForm.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var wanted = searchInput.value.trim();
        wholeTrees.then(function () {
          var ids = (tree.data && tree.data[0] && tree.data[0].ids) || [];
          var hit = null;
          if (ids.indexOf(wanted) >= 0) {
            hit = wanted;
          } else if (wanted) {
            var lower = wanted.toLowerCase();
            var matches = ids.filter(function (id) {
              return id.toLowerCase().indexOf(lower) >= 0;
            });
            hit = matches.length ? matches[0] : null;
            if (searchNote) {
              searchNote.textContent = matches.length
                ? matches.length + " match" + (matches.length === 1 ? "" : "es") + "; showing " + hit
                : "no queue path contains \u201c" + wanted + "\u201d";
            }
          }
          if (hit) {
            if (searchNote && ids.indexOf(wanted) >= 0) {
              searchNote.textContent = "";
            }
            goTo(hit, false);
          }
        });
      });
    }
    if (depthSelect) {
      depthSelect.addEventListener("change", function () {
        var depth = parseInt(depthSelect.value, 10);
        wholeTrees.then(function () {
          window.Plotly.restyle(tree, { maxdepth: [isNaN(depth) ? -1 : depth] });
        });
        setParam("depth", isNaN(depth) || depth < 0 ? null : String(depth));
      });
    }
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

  /* ------------------------------------------------------------------ live refresh */

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

  /* ------------------------------------------------------------------ what-if answers */

  /* The what-if forms ask with fetch and the answer alone comes back (JSON from
     views/whatif.py: the answer region's server-rendered, escaped HTML and its
     figures' data): it is swapped into the page, whose forms stay as they are and
     whose drawn figures are redrawn in place (Plotly.react). The URL becomes the
     answer's own (?run=N), so a reload or a shared link shows the same answer.
     Without script (or fetch) the forms post and the answer page loads. */

  var asked = 0; /* the newest question: an older answer arriving late is not shown */

  function answerRegion() {
    return document.getElementById("whatif-live");
  }

  function answerUrl(run) {
    var region = answerRegion();
    var url = new URL(region.getAttribute("data-answer-url"), window.location.href);
    new URL(window.location.href).searchParams.forEach(function (v, k) {
      url.searchParams.set(k, v);
    });
    url.searchParams.set("run", String(run));
    return url.toString();
  }

  function showAnswer(answer, push) {
    var region = answerRegion();
    var drawn = {};
    region.querySelectorAll("[data-figure][data-rendered]").forEach(function (el) {
      drawn[el.getAttribute("data-figure")] = el;
    });
    region.innerHTML = answer.html; /* our own server-rendered, escaped HTML */
    /* a figure already drawn keeps its element: Plotly.react redraws it in place */
    region.querySelectorAll("[data-figure]").forEach(function (el) {
      var old = drawn[el.getAttribute("data-figure")];
      if (old && answer.figures[el.getAttribute("data-figure")]) {
        old.className = el.className;
        el.replaceWith(old);
      }
    });
    region.setAttribute("data-run", String(answer.run));
    region.hidden = false;
    region.removeAttribute("aria-busy");
    if (push && answer.location) {
      var here = new URL(window.location.href);
      var next = new URL(answer.location, window.location.href);
      if (here.pathname + here.search !== next.pathname + next.search) {
        window.history.pushState({ whatifRun: answer.run }, "", next.toString());
      }
    }
    setupMaxForms();
    setupScrollRegions();
    tickCountdowns();
    var heading = region.querySelector("[data-answer-heading]");
    if (heading && push) {
      heading.focus(); /* where a reader (and a screen reader) goes next */
    }
    document.documentElement.setAttribute("data-answer-shown", String(answer.run));
    renderFigures(region, answer.figures).then(function () {
      region.querySelectorAll(".figure-tall[data-rendered]").forEach(function (el) {
        window.Plotly.Plots.resize(el);
      });
      region.setAttribute("data-figures-run", String(answer.run));
    });
    var waiter = region.querySelector("[data-live-wait]");
    if (waiter) {
      waitForRun(waiter.getAttribute("data-live-wait")); /* not finished yet */
    }
  }

  /* The answer of *run* alone (after a long poll, or back / forward to it). */
  function loadAnswer(run, push) {
    var mine = asked;
    return fetch(answerUrl(run), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) {
          throw new Error("answer " + r.status);
        }
        return r.json();
      })
      .then(function (answer) {
        if (mine === asked) {
          showAnswer(answer, push);
        }
      })
      .catch(function () {
        window.location.reload(); /* the page as the server shows it */
      });
  }

  /* A refused question (the form with its errors, or a 403 page): the server's page in place. */
  function showPage(text) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    var fresh = doc.querySelector("main");
    var main = document.querySelector("main");
    if (!fresh || !main) {
      return false;
    }
    main.innerHTML = fresh.innerHTML;
    setupWhatif();
    setupMaxForms();
    setupScrollRegions();
    renderFigures(main);
    return true;
  }

  function setupWhatif() {
    var region = answerRegion();
    if (!region || !window.fetch || !window.FormData || !window.URL || !window.history.pushState) {
      return;
    }
    document.querySelectorAll("form[data-whatif]:not([data-whatif-bound])").forEach(function (form) {
      form.setAttribute("data-whatif-bound", "true");
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var button = form.querySelector("button[type=submit]");
        var mine = ++asked;
        if (button) {
          button.disabled = true;
        }
        answerRegion().setAttribute("aria-busy", "true");
        document.documentElement.setAttribute("data-whatif-asking", "true");
        fetch(form.action || window.location.href, {
          method: "POST",
          body: new FormData(form),
          credentials: "same-origin",
          headers: { Accept: "application/json" },
        })
          .then(function (r) {
            var type = r.headers.get("Content-Type") || "";
            if (r.ok && type.indexOf("application/json") === 0) {
              return r.json().then(function (answer) {
                if (mine === asked) {
                  showAnswer(answer, true);
                }
              });
            }
            return r.text().then(function (text) {
              if (!showPage(text)) {
                throw new Error("the server answered " + r.status);
              }
            });
          })
          .catch(function () {
            var note = form.querySelector("[data-whatif-note]");
            if (!note) {
              note = document.createElement("p");
              note.className = "errorlist";
              note.setAttribute("role", "alert");
              note.setAttribute("data-whatif-note", "");
              form.appendChild(note);
            }
            note.textContent = "No answer came back (connection lost?). Try again.";
          })
          .then(function () {
            if (button) {
              button.disabled = false;
            }
            var r = answerRegion();
            if (r) {
              r.removeAttribute("aria-busy");
            }
            document.documentElement.removeAttribute("data-whatif-asking");
          });
      });
    });
    if (!setupWhatif.bound) {
      setupWhatif.bound = true;
      /* back / forward between answers: show the answer of the URL's run */
      window.addEventListener("popstate", function () {
        var run = new URL(window.location.href).searchParams.get("run");
        var region = answerRegion();
        if (!region) {
          return;
        }
        asked++;
        if (run && /^\d+$/.test(run)) {
          loadAnswer(Number(run), false);
        } else {
          region.hidden = true;
          region.removeAttribute("data-run");
          region.innerHTML = "";
        }
      });
    }
  }

  /* ------------------------------------------------------------------ uploads */

  function setupUploads() {
    document.querySelectorAll("form[data-upload]").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        if (!window.XMLHttpRequest || !window.FormData) {
          return;
        }
        ev.preventDefault();
        var bar = form.querySelector("progress");
        var note = form.querySelector("[data-upload-note]");
        var button = form.querySelector("button[type=submit]");
        if (button) button.disabled = true;
        if (bar) {
          bar.hidden = false;
          bar.value = 0;
        }
        var xhr = new XMLHttpRequest();
        xhr.open("POST", form.action || window.location.href);
        xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
        xhr.upload.addEventListener("progress", function (e) {
          if (bar && e.lengthComputable) {
            bar.max = e.total;
            bar.value = e.loaded;
          }
          if (note) note.textContent = "Uploading\u2026";
        });
        xhr.upload.addEventListener("load", function () {
          if (bar) bar.removeAttribute("value"); /* indeterminate while the server imports */
          if (note) note.textContent = "Importing\u2026";
        });
        xhr.addEventListener("load", function () {
          var type = xhr.getResponseHeader("Content-Type") || "";
          if (xhr.status >= 200 && xhr.status < 300 && type.indexOf("application/json") === 0) {
            var answer = JSON.parse(xhr.responseText);
            window.location.assign(answer.location); /* the imported snapshot or config */
            return;
          }
          /* refused: show the page's answer (the form with its error) in place */
          var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
          var fresh = doc.querySelector("main");
          var main = document.querySelector("main");
          if (fresh && main) {
            main.innerHTML = fresh.innerHTML;
            setupUploads();
          }
        });
        xhr.addEventListener("error", function () {
          if (button) button.disabled = false;
          if (note) note.textContent = "The upload failed; check the connection and try again.";
        });
        xhr.send(new FormData(form));
      });
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

  /* ------------------------------------------------------------------ max forms */

  function setupMaxForms() {
    var limits = readJSON("limits-data") || {};
    document.querySelectorAll("[data-max-fields]:not([data-bound])").forEach(function (box) {
      box.setAttribute("data-bound", "true");
      var form = box.closest("form");
      var queueInput = form ? form.querySelector(box.getAttribute("data-queue-input") || "[name=queue]") : null;
      var rows = Array.prototype.slice.call(box.querySelectorAll("tr[data-type]"));
      var confirmBox = box.querySelector("[data-remove-confirm]");
      var confirmText = box.querySelector("[data-remove-text]");

      function inForce() {
        var queue = queueInput ? queueInput.value : "";
        return Object.prototype.hasOwnProperty.call(limits, queue) ? limits[queue] : null;
      }

      function update() {
        var current = inForce();
        var queue = queueInput ? queueInput.value.trim() : "";
        var removed = [];
        rows.forEach(function (row) {
          var type = row.getAttribute("data-type");
          var value = row.querySelector("input[type=text]");
          var unlimited = row.querySelector("input[type=checkbox]");
          var old = current && current[type] ? current[type] : null;
          var oldText = old ? old.text : "unlimited";
          // nothing is in force before a queue is chosen, nor for a name not in the snapshot
          // (forms.NO_QUEUE_YET); a form without a queue list (limits) keeps the server's text
          if (current) row.querySelector("[data-in-force]").textContent = oldText;
          else if (Object.keys(limits).length) {
            row.querySelector("[data-in-force]").textContent = queue ? "no such queue here" : "pick a queue";
          }
          var typed = value.value.trim();
          var next = unlimited.checked ? "unlimited" : typed;
          var cell = row.querySelector("[data-change]");
          if (!next) cell.textContent = "give a max or tick unlimited";
          else if (old && next === old.input) cell.textContent = "unchanged";
          else if (!old && next === "unlimited") cell.textContent = "unchanged";
          else cell.textContent = oldText + " \u2192 " + next;
          if (old && unlimited.checked) removed.push(type + " " + old.text);
        });
        if (confirmBox && current) {
          confirmBox.hidden = removed.length === 0;
          if (confirmText && removed.length) {
            confirmText.textContent = "This removes the limit on " + removed.join(", ") + ".";
          }
        }
      }

      function fill() {
        var current = inForce();
        if (!current) return update();
        rows.forEach(function (row) {
          var type = row.getAttribute("data-type");
          var value = row.querySelector("input[type=text]");
          var unlimited = row.querySelector("input[type=checkbox]");
          value.value = current[type] ? current[type].input : "";
          unlimited.checked = !current[type];
        });
        update();
      }

      rows.forEach(function (row) {
        var value = row.querySelector("input[type=text]");
        var unlimited = row.querySelector("input[type=checkbox]");
        value.addEventListener("input", function () {
          if (value.value.trim()) unlimited.checked = false;
          update();
        });
        unlimited.addEventListener("change", function () {
          if (unlimited.checked) value.value = "";
          update();
        });
      });
      if (queueInput) {
        var lastQueue = queueInput.value;
        var onQueue = function () {
          if (queueInput.value === lastQueue) return;
          lastQueue = queueInput.value;
          fill();
        };
        queueInput.addEventListener("change", onQueue);
        queueInput.addEventListener("input", onQueue);
      }
      update();
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

  /* ------------------------------------------------------------------ start */

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

  function start() {
    setupTheme();
    focusMessages();
    setupAutosubmit();
    setupTree();
    setupRunClicks();
    setupUploads();
    setupMaxForms();
    setupWhatif();
    setupScrollRegions();
    window.addEventListener("resize", setupScrollRegions);
    tickCountdowns();
    window.setInterval(tickCountdowns, 1000);
    window.performance.mark("dashboard:figures-start");
    renderFigures(document).then(function () {
      /* a figure that fills its column is re-measured once the figures beside it are drawn */
      document.querySelectorAll(".figure-tall[data-rendered]").forEach(function (el) {
        window.Plotly.Plots.resize(el);
      });
      window.performance.mark("dashboard:figures-end");
      document.documentElement.setAttribute("data-figures-rendered", "true");
      window.dashboardFiguresRenderedAt = window.performance.now();
    });
    setupLive();
  }

  if (document.readyState === "loading") {
    /* loaded in the page, not deferred: the figure marked data-draw-early is there */
    drawEarly();
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
