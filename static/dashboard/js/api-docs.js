/* Swagger UI at /api/docs/: name the selects of an opened operation's parameters (their
   rows name them, the selects do not) and let the keyboard reach a scrolling example.
   Swagger UI draws as the reader opens operations: the marks follow its changes. */
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  if (!root || !window.MutationObserver) {
    return;
  }
  function mark() {
    root.querySelectorAll("tr[data-param-name]").forEach(function (row) {
      row.querySelectorAll("select, input, textarea").forEach(function (control) {
        if (!control.getAttribute("aria-label") && !control.id) {
          control.setAttribute("aria-label", row.getAttribute("data-param-name"));
        }
      });
    });
    root.querySelectorAll(".highlight-code pre, .microlight").forEach(function (pre) {
      if (!pre.hasAttribute("tabindex")) {
        pre.setAttribute("tabindex", "0");
      }
    });
  }
  new MutationObserver(mark).observe(root, { childList: true, subtree: true });
  mark();
})();
