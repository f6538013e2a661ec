"""Screenshots of the built site at a given width, and what a reader would find clipped there.

Renders each page in Qt WebEngine (Chromium, headless: QT_QPA_PLATFORM=offscreen) and
writes PAGE.png under OUT at the page's full height (cut at 9,000 px). For every page it
also lists, from the rendered DOM, each code block with a line longer than the visible width
(the site wraps it; without the wrap it would be clipped), each table wider than the text
column, and each image that did not load or rendered empty. Exit status 1 if any page has one.

    pip install PyQt6 PyQt6-WebEngine        # in a venv of its own: about 120 MB, no torch
    mkdocs build -d /tmp/site
    python tools/screenshots.py /tmp/site OUT [--width 1280] [PAGE ...]

PAGE is a path in the site ("", "quickstart/", "benchmark/"), or "all" for every page; by
default home, quickstart, one guide, Benchmark, API reference and the spec's index.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import sys
import threading
from pathlib import Path

PAGES = ["", "quickstart/", "guides/push-pull/", "benchmark/", "api/", "spec/"]
MAX_HEIGHT = 9000

# What a reader cannot see without scrolling sideways, or sees empty.
_FINDINGS_JS = """
(() => {
  const out = [];
  for (const pre of document.querySelectorAll('.md-content pre')) {
    const code = pre.querySelector('code') || pre;
    const wrap = code.style.whiteSpace;
    code.style.whiteSpace = 'pre';  // the site wraps long lines: measure them unwrapped
    const [need, have] = [code.scrollWidth, code.clientWidth];
    code.style.whiteSpace = wrap;
    if (need > have + 2) {
      const line = code.innerText.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), '');
      out.push(`code line wraps: ${need} px of text in ${have} px; longest line: ${line.trim().slice(0, 90)}`);
    }
  }
  const column = document.querySelector('.md-content .md-typeset');
  for (const table of document.querySelectorAll('.md-content table')) {
    if (column && table.scrollWidth > column.clientWidth + 2) {
      const head = [...table.querySelectorAll('th')].map(t => t.innerText).join(' | ').slice(0, 90);
      out.push(`table scrolls: ${table.scrollWidth} px in a ${column.clientWidth} px column; header: ${head}`);
    }
  }
  for (const img of document.querySelectorAll('.md-content img')) {
    if (!img.complete || img.naturalWidth === 0 || img.clientHeight < 20) {
      out.push(`image empty or not loaded: ${img.getAttribute('src')}`);
    }
  }
  return JSON.stringify({height: document.documentElement.scrollHeight, findings: out});
})()
"""


def serve(root: Path) -> str:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}/"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("pages", nargs="*", default=PAGES)
    ap.add_argument("--width", type=int, default=1280)
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if os.geteuid() == 0:  # Chromium refuses to run as root with its sandbox
        os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = os.environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "") + " --no-sandbox"
    from PyQt6.QtCore import QTimer, QUrl
    from PyQt6.QtWebEngineWidgets import QWebEngineView
    from PyQt6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    base = serve(args.site)
    args.out.mkdir(parents=True, exist_ok=True)
    view = QWebEngineView()
    view.resize(args.width, 900)
    view.show()
    pages = list(args.pages)
    if pages == ["all"]:
        pages = sorted(str(p.parent.relative_to(args.site)) + "/" for p in args.site.rglob("index.html"))
        pages = ["" if p == "./" else p for p in pages]
    report: dict[str, list[str]] = {}

    def next_page() -> None:
        if not pages:
            app.quit()
            return
        view.resize(args.width, 900)
        view.load(QUrl(base + pages[0]))

    def loaded(ok: bool) -> None:
        QTimer.singleShot(1500, lambda: view.page().runJavaScript(_FINDINGS_JS, measured))  # fonts, JS, images

    def measured(result: str) -> None:
        facts = json.loads(result)
        view.resize(args.width, min(facts["height"], MAX_HEIGHT))
        QTimer.singleShot(1200, lambda: shoot(facts["findings"]))

    def shoot(findings: list[str]) -> None:
        page = pages.pop(0)
        name = (page.strip("/").replace("/", "-") or "home") + ".png"
        view.grab().save(str(args.out / name))
        report[page or "/"] = findings
        print(f"{page or '/':<24} {name}: " + ("ok" if not findings else f"{len(findings)} finding(s)"), flush=True)
        for f in findings:
            print(f"    {f}", flush=True)
        next_page()

    view.loadFinished.connect(loaded)
    QTimer.singleShot(30_000 + 10_000 * len(pages), app.quit)  # a page that never finishes loading ends the run
    next_page()
    app.exec()
    return 1 if any(report.values()) or pages else 0


if __name__ == "__main__":
    sys.exit(main())
