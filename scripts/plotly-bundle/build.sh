#!/bin/sh
# Rebuilds static/dashboard/vendor/plotly-dashboard.min.js, the pages' partial plotly.js
# (only the trace types dashboard/charts/ draw), from the npm registry's plotly.js at the
# version the pinned plotly Python package bundles, with the locked esbuild.
#
#   sh scripts/plotly-bundle/build.sh
#
# After a plotly (Python) upgrade: set "plotly.js" in package.json to the version named in
# the first line of plotly/package_data/plotly.min.js, run `npm install --ignore-scripts`
# here to update package-lock.json, then this script.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vendor="$here/../../static/dashboard/vendor"
cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
node build.mjs "$vendor/plotly-dashboard.min.js"
cp node_modules/plotly.js/LICENSE "$vendor/plotly.js-LICENSE.txt"
ls -l "$vendor"
