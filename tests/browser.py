"""Open an HTML file in real headless Chromium (Debian's) and report what a person would see."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without these, Chromium tries to reach Google's services on a closed network.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def open_report(path: Path, screenshot: Path | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            console, requests = [], []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            start = time.perf_counter()
            page.goto(Path(path).resolve().as_uri(), wait_until="load")
            load_s = time.perf_counter() - start
            images = page.evaluate(
                "Array.from(document.images).map(i => ({alt: i.alt, ok: i.complete && "
                "i.naturalWidth > 0}))"
            )
            info = {
                "title": page.title(),
                "console": console,
                "external_requests": [u for u in requests if not u.startswith(("file:", "data:"))],
                "images": images,
                "studies": page.eval_on_selector_all(
                    "section.study h2", "e => e.map(x => x.textContent)"
                ),
                "text": page.inner_text("body"),
                "bad_cells": page.eval_on_selector_all("td.bad", "e => e.map(x => x.textContent)"),
                "load_s": load_s,
                "html": page.content(),
            }
            if screenshot:
                page.screenshot(path=str(screenshot), full_page=True)
            return info
        finally:
            browser.close()


def dialogs(path: Path, wait_ms: int = 1500) -> list[str]:
    """The messages of every dialog (alert, confirm, prompt) a page opens as it loads
    and just after: a script that a string of the page brought in opens one."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page, found = browser.new_page(), []
            page.on("dialog", lambda d: (found.append(d.message), d.dismiss()))
            page.goto(Path(path).resolve().as_uri(), wait_until="load")
            page.wait_for_timeout(wait_ms)
            return found
        finally:
            browser.close()


# Every SVG figure of the report, parsed from its data URI into the page (an <img> hides
# its document), and measured there: the legend's box (matplotlib gid "legend") against
# what the figure draws as data (gids starting "data"). Lines and filled areas are
# tested by their geometry, not by their boxes: the box of a diagonal line covers half
# the plot, and a legend inside that box may still cover nothing.
FIGURE_GEOMETRY_JS = r"""
async (imgs) => {
  const inside = (p, b) => p.x > b.left && p.x < b.right && p.y > b.top && p.y < b.bottom;
  const meets = (a, b) =>
    a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const shrunk = (r, by) => ({left: r.left + by, right: r.right - by, top: r.top + by,
                              bottom: r.bottom - by});
  const box = (r) => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  function covers(el, b) {
    if (!meets(el.getBoundingClientRect(), b)) return false;
    // a <use> (markers, and matplotlib's collections: bands, error bars) draws the shape
    // it refers to, moved by its x and y, in its own style
    let shape = el, ctm = el.getScreenCTM();
    if (el.tagName === "use") {
      const ref = (el.getAttribute("href") || el.getAttribute("xlink:href") || "").slice(1);
      shape = el.ownerSVGElement.getElementById(ref);
      ctm = ctm.translate(el.x.baseVal.value, el.y.baseVal.value);
    }
    if (!(shape instanceof SVGGeometryElement)) return true;  // text: its box
    const length = shape.getTotalLength();
    const steps = Math.min(4000, Math.max(2, Math.ceil(length)));
    for (let i = 0; i <= steps; i++) {
      const p = shape.getPointAtLength(length * i / steps).matrixTransform(ctm);
      if (inside(p, b)) return true;
    }
    if (getComputedStyle(el).fill !== "none") {
      const inv = ctm.inverse();
      for (let i = 0; i <= 16; i++) for (let j = 0; j <= 16; j++) {
        const p = new DOMPoint(b.left + (b.right - b.left) * i / 16,
                               b.top + (b.bottom - b.top) * j / 16).matrixTransform(inv);
        if (shape.isPointInFill(p)) return true;
      }
    }
    return false;
  }
  const shapes = "path, use, text, rect, line, polyline, polygon, circle, ellipse";
  const out = [];
  for (const img of imgs) {
    const src = img.getAttribute("src") || "";
    const figure = {alt: img.alt, figure: img.dataset.figure, svg: false, legends: [],
                    data: 0, collisions: [], clipped: []};
    out.push(figure);
    if (!src.startsWith("data:image/svg+xml;base64,")) continue;
    const bytes = Uint8Array.from(atob(src.split(",")[1]), (c) => c.charCodeAt(0));
    const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes),
                                                "image/svg+xml");
    const holder = document.createElement("div");
    holder.style.cssText = "position:absolute;left:0;top:0;visibility:hidden";
    document.body.appendChild(holder);
    try {
      const svg = holder.appendChild(document.importNode(doc.documentElement, true));
      figure.svg = true;
      const root = svg.getBoundingClientRect();
      const data = [...svg.querySelectorAll('[id^="data"]')];
      figure.data = data.length;
      for (const legend of svg.querySelectorAll('[id^="legend"]')) {
        const b = box(legend.getBoundingClientRect());
        figure.legends.push(b);
        if (b.left < root.left - 1 || b.right > root.right + 1 || b.top < root.top - 1
            || b.bottom > root.bottom + 1) figure.clipped.push(legend.id);
        const probe = shrunk(b, 1);  // touching is not covering
        for (const d of data) {
          const parts = (d.matches(shapes) ? [d] : [...d.querySelectorAll(shapes)])
            .filter((el) => !el.closest("defs"));  // drawn where a <use> puts them
          if (parts.some((el) => covers(el, probe))) figure.collisions.push(d.id);
        }
      }
    } finally {
      holder.remove();
    }
  }
  return out;
}
"""

# What sticks out sideways: the page's own width against the window's, and the widest
# elements that reach past the right edge of the window (to say what overflows).
OVERFLOW_JS = r"""
() => {
  const width = document.documentElement.clientWidth;
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.right > width + 0.5 && getComputedStyle(el).position !== "fixed") {
      let inScroller = false;
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX;
        if (o === "auto" || o === "scroll" || o === "hidden") { inScroller = true; break; }
      }
      if (!inScroller) wide.push(`${el.tagName.toLowerCase()}${el.className ? "." +
        String(el.className).split(" ").join(".") : ""} (right edge ${Math.round(r.right)})`);
    }
  }
  return {scroll_width: document.documentElement.scrollWidth, client_width: width,
          sticking_out: wide.slice(0, 20)};
}
"""

# The figure grid: each figure's box against its cell's, and the grid's width.
FIGURE_GRID_JS = r"""
() => [...document.querySelectorAll(".figures")].map((grid) => {
  const g = grid.getBoundingClientRect();
  return {
    grid_width: g.width,
    figures: [...grid.querySelectorAll("img")].map((img) => {
      const r = img.getBoundingClientRect();
      return {figure: img.dataset.figure, left: r.left - g.left, right: r.right - g.left,
              top: r.top - g.top, width: r.width, height: r.height,
              natural_width: img.naturalWidth, natural_height: img.naturalHeight};
    }),
  };
})
"""


def report_layout(path: Path, width: int, screenshot: Path | None = None) -> dict:
    """The report at a window `width` px wide: what overflows sideways, the figure grid,
    and every SVG figure's legend against its data (FIGURE_GEOMETRY_JS)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(Path(path).resolve().as_uri(), wait_until="load")
            info = {
                "width": width,
                "overflow": page.evaluate(OVERFLOW_JS),
                "grids": page.evaluate(FIGURE_GRID_JS),
            }
            if screenshot:
                page.screenshot(path=str(screenshot), full_page=True)
            info["figures"] = page.eval_on_selector_all("img[data-figure]", FIGURE_GEOMETRY_JS)
            return info
        finally:
            browser.close()
