// The dashboard's partial plotly.js: the core (which holds the scatter trace) and the
// trace types the pages draw (dashboard/charts/: bar, heatmap, icicle, scatter).
// Built by build.sh from plotly.js's own lib/ index modules, as its custom bundles are.
"use strict";

var Plotly = require("plotly.js/lib/core");

Plotly.register([
  require("plotly.js/lib/bar"),
  require("plotly.js/lib/heatmap"),
  require("plotly.js/lib/icicle"),
  require("plotly.js/lib/scatter"),
]);

module.exports = Plotly;
