/*
 * The queue tree page (templates/dashboard/tree.html): click or search a queue, zoom
 * (each step a history entry), collapse levels, the selected queue's bars fetched.
 * Needs common.js and figures.js.
 */
(function () {
  "use strict";

  var D = window.dashboard;
  var renderFigure = D.renderFigure;

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
      D.wholeTrees().then(function () {
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
        D.wholeTrees().then(function () {
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
        D.wholeTrees().then(function () {
          window.Plotly.restyle(tree, { maxdepth: [isNaN(depth) ? -1 : depth] });
        });
        setParam("depth", isNaN(depth) || depth < 0 ? null : String(depth));
      });
    }
  }

  D.setupTree = setupTree;
})();
