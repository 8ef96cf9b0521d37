"""Benchmark: loading plotly.js in Chromium, the whole bundle against the pages' partial one.

Serves a blank page and one plotly.js file from a local HTTP server, and loads the
page in Debian's Chromium (Playwright) with an empty cache, then again warm (from the
browser's cache), alternating the two bundles so that both meet the same machine load.
Prints, per bundle, the bytes and how long the ``<script>`` took from the page's start
until ``window.Plotly`` was there (fetch, parse, compile, run), median of the loads.

    .venv/bin/python benchmarks/plotly_bundle.py [--loads 7]

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import plotly
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
PARTIAL = ROOT / "static" / "dashboard" / "vendor" / "plotly-dashboard.min.js"
WHOLE = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>b</title>
<script>window.t0 = performance.now();</script>
<script src="{name}" onload="window.t1 = performance.now()"></script></head><body></body></html>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    print(f"machine load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bundles = {"whole": WHOLE, "partial": PARTIAL}
        for name, path in bundles.items():
            (folder / f"{name}.js").write_bytes(path.read_bytes())
            (folder / f"{name}.html").write_text(PAGE.format(name=f"{name}.js"))
        handler = functools.partial(_Quiet, directory=str(folder))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        times: dict[tuple[str, str], list[float]] = {}
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"]
            )
            for _ in range(args.loads):
                for name in bundles:
                    context = browser.new_context()  # an empty cache
                    page = context.new_page()
                    for state in ("cold", "warm"):
                        page.goto(f"{base}/{name}.html")
                        page.wait_for_function("window.t1 !== undefined && window.Plotly")
                        took = page.evaluate("window.t1 - window.t0")
                        times.setdefault((name, state), []).append(took)
                    context.close()
            browser.close()
        server.shutdown()
    for name, path in bundles.items():
        size = path.stat().st_size
        cold = statistics.median(times[(name, "cold")])
        warm = statistics.median(times[(name, "warm")])
        print(
            f"{name:8} {size / 1e6:5.2f} MB  script until window.Plotly: "
            f"cold median {cold:6.0f} ms, warm median {warm:6.0f} ms  ({args.loads} loads)"
        )
    print(f"machine load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
