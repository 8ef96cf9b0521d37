/* Sets the light / dark theme before the page paints (stored choice, else the OS setting). */
(function () {
  "use strict";
  var theme = null;
  try {
    theme = window.localStorage.getItem("dashboard-theme");
  } catch (e) {
    theme = null;
  }
  if (theme !== "light" && theme !== "dark") {
    theme = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  document.documentElement.setAttribute("data-theme", theme);
})();
