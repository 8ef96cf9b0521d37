/* DRF's browsable API pages: name the controls its templates leave unnamed (the
   format menu's toggle, the HTML forms' fields, whose labels have no "for"), and let
   the keyboard reach a scrolling response. Loaded by templates/rest_framework/api.html. */
(function () {
  "use strict";
  var count = 0;
  document.querySelectorAll(".form-group").forEach(function (group) {
    var label = group.querySelector("label.control-label");
    var control = group.querySelector("input:not([type=hidden]), select, textarea");
    if (!label || !control || label.htmlFor) {
      return;
    }
    if (!control.id) {
      count += 1;
      control.id = "api-field-" + count;
    }
    label.htmlFor = control.id;
  });
  document.querySelectorAll("button.dropdown-toggle").forEach(function (button) {
    if (!button.textContent.trim() && !button.getAttribute("aria-label")) {
      button.setAttribute(
        "aria-label",
        button.getAttribute("data-original-title") || button.getAttribute("title") || "More formats"
      );
    }
  });
  document.querySelectorAll(".response-info pre, .request-info pre").forEach(function (pre) {
    pre.setAttribute("tabindex", "0");
  });
})();
