/*
 * Max forms (templates/dashboard/_max_fields.html: the changes page, a change's edit
 * page, the what-if page): the max in force of the chosen queue (the page's
 * limits-data), old -> new per type, "unlimited" as an explicit box and a
 * confirmation when a limit is removed. Needs common.js.
 */
(function () {
  "use strict";

  var D = window.dashboard;
  var readJSON = D.readJSON;

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

  D.setupMaxForms = setupMaxForms;
})();
