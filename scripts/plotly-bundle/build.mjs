// esbuild with the options of plotly.js's own esbuild-config.js (iife, global Plotly,
// inline CSS, GLSL, NODE_DEBUG off, the regl and stream aliases), minified as its dist.
import { build } from "esbuild";
import { environmentPlugin } from "esbuild-plugin-environment";
import { glsl } from "esbuild-plugin-glsl";
import InlineCSSPlugin from "esbuild-plugin-inline-css";
import { readFileSync } from "node:fs";

const version = JSON.parse(readFileSync("node_modules/plotly.js/package.json", "utf8")).version;
const outfile = process.argv[2];

await build({
  entryPoints: ["entry.cjs"],
  outfile,
  format: "iife",
  globalName: "Plotly",
  bundle: true,
  minify: true,
  sourcemap: false,
  legalComments: "linked",
  banner: {
    js: `/**\n* plotly.js v${version} partial bundle (bar, heatmap, icicle, scatter) for the dashboard\n* Copyright 2012-2026, Plotly, Inc.\n* All rights reserved.\n* Licensed under the MIT license\n*/`,
  },
  plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
  alias: { regl: "@plotly/regl", stream: "stream-browserify" },
  define: { global: "window", "define.amd": "false" },
  target: "es2016",
  logLevel: "warning",
});
