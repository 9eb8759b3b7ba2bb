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
