"""Load time of report.html for a synthetic 100,000-op report, measured in headless Chromium.

Records: the time to build the page in Python, the file size, and in the browser the time from navigation start
to the page being built (``window.__rooflineReadyAt``, set after every section is drawn) and to
DOMContentLoaded (the page is usable after the later of the two), plus the time of one table sort and one
filter over all ops. The machine's load average is recorded: on a shared machine, timings stretch with it. Writes benchmarks/results/html_load.json.

    .venv/bin/python benchmarks/html_load.py [--ops 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "render"))

from roofline_synthetic import make_big_report  # noqa: E402

from roofline.io import atomic_write_text  # noqa: E402
from roofline.render.html import render_html  # noqa: E402


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,1000", f"--user-data-dir={tempfile.mkdtemp()}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def measure_load(driver, url: str) -> dict:
    driver.get(url)
    deadline = time.time() + 120
    while not driver.execute_script("return window.__rooflineReady === true"):
        if time.time() > deadline:
            raise RuntimeError("page did not finish building in 120 s")
        time.sleep(0.02)
    ready_ms = driver.execute_script(
        "return window.__rooflineReadyAt - performance.timing.navigationStart")
    nav = driver.execute_script(
        "var t = performance.timing; return {dom_content_loaded_ms: t.domContentLoadedEventEnd - t.navigationStart,"
        " load_event_ms: t.loadEventEnd - t.navigationStart}")
    return {"ready_ms": ready_ms, **nav}


def measure_interactions(driver) -> dict:
    from selenium.webdriver.common.by import By

    def timed(action) -> float:
        driver.execute_script("window.__t0 = performance.now()")
        action()
        return driver.execute_script("return performance.now() - window.__t0")

    header = driver.find_element(By.CSS_SELECTOR, '#op-table th[data-key="flops"]')
    sort_ms = timed(lambda: driver.execute_script("arguments[0].click()", header))
    box = driver.find_element(By.ID, "op-filter")
    filter_ms = timed(lambda: driver.execute_script(
        "arguments[0].value = 'softmax'; arguments[0].dispatchEvent(new Event('input'));", box))
    time.sleep(0.6)
    return {"sort_all_ops_ms": sort_ms, "filter_dispatch_ms": filter_ms,
            "rows_after_filter": driver.find_element(By.ID, "op-count").text}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    report = make_big_report(args.ops)
    t0 = time.perf_counter()
    page = render_html(report)
    render_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        path.write_text(page, encoding="utf-8")
        driver = browser()
        try:
            loads = [measure_load(driver, path.as_uri()) for _ in range(args.repeats)]
            interactions = measure_interactions(driver)
            errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            version = driver.capabilities.get("browserVersion")
        finally:
            driver.quit()
    result = {
        "what": "report.html for a synthetic report, loaded from file:// in headless Chromium",
        "ops": args.ops,
        "html_bytes": len(page.encode()),
        "python_render_s": round(render_s, 3),
        "browser_ready_ms": {"median": statistics.median(l["ready_ms"] for l in loads), "samples": [l["ready_ms"] for l in loads]},
        "dom_content_loaded_ms": [l["dom_content_loaded_ms"] for l in loads],
        "interactions": interactions,
        "console_errors": len(errors),
        "method": "navigationStart -> window.__rooflineReadyAt (set after every section is built), "
                  f"{args.repeats} fresh navigations; sort = click on the FLOPs header (sorts all ops, redraws one page)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs, Chromium {version}",
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
    }
    out = ROOT / "benchmarks" / "results" / "html_load.json"
    atomic_write_text(out, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
