/*
 * Upload progress for imports (templates/dashboard/import.html): the file sent with
 * XMLHttpRequest, its progress shown, then the imported snapshot or config opened, or
 * the refused form shown in place. Needs common.js.
 */
(function () {
  "use strict";

  var D = window.dashboard;

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

  D.setupUploads = setupUploads;
})();
