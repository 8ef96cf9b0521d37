/*
 * The what-if page's forms answered in place (templates/dashboard/whatif.html).
 * Needs common.js, figures.js, live.js (an answer still being computed is waited
 * for) and maxforms.js (the answer's schedule form).
 */
(function () {
  "use strict";

  var D = window.dashboard;
  var renderFigures = D.renderFigures;
  var setupScrollRegions = D.setupScrollRegions;
  var tickCountdowns = D.tickCountdowns;

  function setupMaxForms() {
    D.setupMaxForms();
  }

  function waitForRun(url) {
    D.waitForRun(url);
  }

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

  D.answerRegion = answerRegion;
  D.loadAnswer = loadAnswer;
  D.setupWhatif = setupWhatif;
})();
