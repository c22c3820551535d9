"""The HTML report in a real headless Chromium: loads clean and offline, hover, sort, filter, zoom, toggles, XSS.

Chromium and chromedriver come from Debian (`make test` installs them); selenium drives them without its
manager downloading anything. A screenshot of each page is saved under tests/artifacts/ (gitignored).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from roofline.analyze.diff import diff_reports
from roofline.render.diff import render_diff_html
from roofline.render.html import render_html
from roofline.report import Report, module_tree

from roofline_synthetic import XSS, make_report, with_ranks

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="Debian chromium + chromium-driver not installed (apt-get install -y chromium chromium-driver)",
    ),
]


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,1000",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def open_page(driver, tmp_path, html: str, name: str = "report.html"):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    driver.get_log("browser")
    driver.get(path.as_uri())
    for _ in range(100):
        if driver.execute_script("return window.__rooflineReady === true"):
            break
        time.sleep(0.05)
    assert driver.execute_script("return window.__rooflineReady === true"), "page did not finish building"
    return path


def click(driver, element) -> None:
    """Scroll the element to mid-screen first, so the sticky section bar never covers it."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element)
    element.click()


def console_problems(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "WARNING")]


def save_screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1400, min(int(height) + 50, 9000))
    out = ARTIFACTS / name
    driver.save_screenshot(str(out))
    driver.set_window_size(1400, 1000)
    return out


@pytest.fixture(scope="module")
def report() -> Report:
    r = with_ranks(make_report(120))
    r.ops[3].module = XSS
    r.summary.module_tree = module_tree(r.ops)
    return r


def test_loads_clean_offline_and_escapes(driver, tmp_path, report):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    open_page(driver, tmp_path, render_html(report))
    assert console_problems(driver) == []
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    csp = driver.find_element(By.CSS_SELECTOR, 'meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text
    assert driver.execute_script("return document.querySelectorAll('script').length") == 2
    assert XSS in driver.find_element(By.ID, "modules").text
    for section in ("overview", "roofline", "findings", "ops", "modules", "timing", "memory", "syncs", "ranks", "environment"):
        assert driver.find_element(By.ID, section).is_displayed()
    assert "rank 1 · straggler" in driver.find_element(By.ID, "ranks").text
    shot = save_screenshot(driver, "report.png")
    assert shot.stat().st_size > 20_000


def test_hover_shows_the_op(driver, tmp_path, report):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    open_page(driver, tmp_path, render_html(report))
    point = driver.find_element(By.CSS_SELECTOR, 'circle.pt[data-point="0"]')
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", point)
    ActionChains(driver).move_to_element(point).perform()
    tip = driver.find_element(By.ID, "roof-tooltip")
    assert tip.is_displayed()
    text = tip.text
    data = json.loads(driver.execute_script("return document.getElementById('roofline-data').textContent"))
    expected = data["chart"]["points"][0]
    assert expected["name"] in text and expected["module"] in text
    for label in ("input shapes", "FLOPs", "bytes", "device time", "intensity", "efficiency", "bound", expected["source"]):
        assert label in text
    assert console_problems(driver) == []


def test_sort_filter_and_paginate(driver, tmp_path, report):
    from selenium.webdriver.common.by import By

    open_page(driver, tmp_path, render_html(report))
    data = json.loads(driver.execute_script("return document.getElementById('roofline-data').textContent"))
    flops = data["table"]["flops"]

    def first_rows(n=5):
        rows = driver.find_elements(By.CSS_SELECTOR, "#op-table tbody tr")[:n]
        return [int(r.get_attribute("data-row")) for r in rows]

    header = driver.find_element(By.CSS_SELECTOR, '#op-table th[data-key="flops"]')
    click(driver, header)
    assert header.get_attribute("aria-sort") == "descending"
    assert flops[first_rows(1)[0]] == max(flops)
    click(driver, header)
    assert header.get_attribute("aria-sort") == "ascending"
    assert [flops[i] for i in first_rows()] == sorted(flops)[:5]

    assert "1–100 of 120" in driver.find_element(By.ID, "op-count").text
    click(driver, driver.find_element(By.ID, "page-next"))
    assert len(driver.find_elements(By.CSS_SELECTOR, "#op-table tbody tr")) == 20

    box = driver.find_element(By.ID, "op-filter")
    box.send_keys("softmax")
    time.sleep(0.3)
    names = [r.find_element(By.CSS_SELECTOR, "td.opname").text for r in driver.find_elements(By.CSS_SELECTOR, "#op-table tbody tr")]
    assert names and all("softmax" in n for n in names)
    assert "filtered from 120" in driver.find_element(By.ID, "op-count").text
    assert console_problems(driver) == []


def test_zoom_and_dtype_toggle(driver, tmp_path, report):
    from selenium.webdriver.common.by import By

    open_page(driver, tmp_path, render_html(report))
    ticks = lambda: [t.text for t in driver.find_elements(By.CSS_SELECTOR, "#roofline svg .grid text")]
    before = ticks()
    click(driver, driver.find_element(By.ID, "zoom-in"))
    click(driver, driver.find_element(By.ID, "zoom-in"))
    assert ticks() != before
    click(driver, driver.find_element(By.ID, "zoom-reset"))
    assert ticks() == before
    roofs = lambda: [r.get_attribute("data-roof") for r in driver.find_elements(By.CSS_SELECTOR, "#roofline polyline[data-roof]")]
    assert any("float32" in r for r in roofs())
    click(driver, driver.find_element(By.CSS_SELECTOR, 'input[data-dtype="float32"]'))
    assert not any("float32" in r for r in roofs())
    assert console_problems(driver) == []


def test_empty_report_and_diff_page_load_clean(driver, tmp_path):
    open_page(driver, tmp_path, render_html(Report()), "empty.html")
    assert console_problems(driver) == []
    a, b = make_report(40), make_report(40)
    for op in b.ops[:5]:
        op.time_s *= 2
    b.summary.total_time_s = sum(op.time_s for op in b.ops)
    b.ops[0].module = XSS
    open_page(driver, tmp_path, render_diff_html(diff_reports(a, b, "base.json", "new.json", fail_above_pct=5)), "diff.html")
    assert console_problems(driver) == []
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    from selenium.webdriver.common.by import By

    assert "FAIL" in driver.find_element(By.ID, "verdict").text
    assert XSS in driver.find_element(By.ID, "ops").text
    save_screenshot(driver, "diff.png")


def test_embed_fragment_runs_inside_a_page(driver, tmp_path):
    fragment = render_html(make_report(20), embed=True)
    host = f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><h1>notebook</h1>{fragment}</body></html>"
    path = tmp_path / "host.html"
    path.write_text(host, encoding="utf-8")
    driver.get(path.as_uri())
    time.sleep(0.5)
    from selenium.webdriver.common.by import By

    driver.switch_to.frame(driver.find_element(By.TAG_NAME, "iframe"))
    try:
        for _ in range(100):
            if driver.execute_script("return window.__rooflineReady === true"):
                break
            time.sleep(0.05)
        assert driver.find_element(By.ID, "op-table").is_displayed()
    finally:
        driver.switch_to.default_content()
    assert console_problems(driver) == []


def test_the_memory_access_section_shows_the_join_and_both_charts(driver, tmp_path):
    from ncu_cases import DATA, H200
    from selenium.webdriver.common.by import By

    from roofline.analyze.ncu_join import join_ncu
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.capture.ncu_csv import read_ncu_csv

    joined = analyze_trace_file(H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz")
    join_ncu(joined, read_ncu_csv(DATA / "ncu_h200" / "hf_llama_tiny_fwd_fp16_b4_s512.csv.gz"))
    open_page(driver, tmp_path, render_html(joined), "ncu.html")
    assert console_problems(driver) == []
    section = driver.find_element(By.ID, "traffic")
    assert section.is_displayed()
    assert "342 of 343 ncu kernels" in section.text and "LlamaDecoderLayer*" in section.text
    widths = driver.execute_script("return Array.from(document.querySelectorAll('#traffic img')).map(i => i.naturalWidth)")
    assert len(widths) == 2 and min(widths) > 500
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#op-table th")]
    assert heads[heads.index("Bytes") + 1:heads.index("Bytes") + 3] == ["DRAM (ncu)", "DRAM / min"]
    save_screenshot(driver, "report_ncu.png")


def test_a_thousand_rank_job_pages_its_rank_table(driver, tmp_path):
    from selenium.webdriver.common.by import By

    from roofline.report import RankRecord

    r = make_report(20)
    r.ranks = [RankRecord(rank=i, step_time_s=0.01 + (0.004 if i == 700 else 0.0), compute_time_s=0.007,
                          communication_time_s=0.002, idle_time_s=0.001, straggler=i == 700) for i in range(1024)]
    open_page(driver, tmp_path, render_html(r))
    assert console_problems(driver) == []
    section = driver.find_element(By.ID, "ranks")
    assert "Stragglers: rank 700" in section.text
    assert len(section.find_elements(By.CSS_SELECTOR, ".rank-row")) == 64
    assert driver.find_element(By.ID, "rank-page").text == "ranks 1–64 of 1024 · page 1/16"
    for _ in range(10):
        click(driver, driver.find_element(By.ID, "rank-next"))
    assert driver.find_element(By.ID, "rank-page").text == "ranks 641–704 of 1024 · page 11/16"
    assert "rank 700 · straggler" in section.text
    assert len(section.find_elements(By.CSS_SELECTOR, "table.simple tbody tr")) == 64
    click(driver, driver.find_element(By.ID, "rank-prev"))
    assert "rank 700 · straggler" not in section.text


def test_a_diff_finding_keeps_its_rule_name_on_one_line(driver, tmp_path):
    """Five long locations squeezed the rule name of a diff's finding into a column a few letters wide
    ('unfuse / d-chai / n'): the row wraps instead."""
    from selenium.webdriver.common.by import By

    from roofline.report import Finding

    a, b = make_report(20), make_report(20)
    b.findings = [Finding(rule="unfused-chain", title="unfused chain of 7 memory-bound ops", category="fusion",
                          locations=[f"src/roofline/models/llama.py:76 (layers.{i}.attention_norm)" for i in range(5)],
                          estimated_savings_s=1e-3, fix="fuse the chain")]
    open_page(driver, tmp_path, render_diff_html(diff_reports(a, b, "base.json", "new.json")), "diff.html")
    assert console_problems(driver) == []
    rule = driver.find_element(By.CSS_SELECTOR, "#findings .f-meta code")
    assert rule.text == "unfused-chain"
    lines = driver.execute_script(
        "var r = document.createRange(); r.selectNodeContents(arguments[0]); return r.getClientRects().length", rule)
    assert lines == 1


def test_each_gpus_ceilings_and_an_unsized_collective_in_the_page(driver, tmp_path):
    """A report of two GPU models shows a ceilings table per GPU, headed by its device; a collective whose size
    the trace did not record shows "?" bytes, not 0 B."""
    from selenium.webdriver.common.by import By

    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.report import OpRecord

    data = Path(__file__).resolve().parents[1] / "data" / "devtraces"
    report = analyze_trace_file(data / "two_gpus_taking_turns_a100_h100.json")
    report.ops.append(OpRecord(name="c10d::allreduce_", bound="communication", modeled=False, time_s=1e-3))
    open_page(driver, tmp_path, render_html(report), "two_gpus.html")
    assert console_problems(driver) == []
    heads = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#environment h3")]
    assert heads == ["Ceilings of device 0: NVIDIA A100-SXM4-80GB (datasheet)",
                     "Ceilings of device 1: NVIDIA H100 80GB HBM3 (datasheet)", "Environment"]
    row = next(r for r in driver.find_elements(By.CSS_SELECTOR, "#ops tbody tr") if "c10d::allreduce_" in r.text)
    cells = [c for c in row.find_elements(By.TAG_NAME, "td") if "message size" in
             (c.get_attribute("title") or "")]
    assert [c.text for c in cells] == ["?"]


def test_the_diff_page_fits_a_1280_px_window(driver, tmp_path):
    """The diff page scrolled sideways at 1280 px: its row keys (op @ module) never wrapped, so a long op name or
    module path (HTA's `torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>`) widened the nine-column
    tables past the window, and a long report path widened the heading. Now the keys and the heading wrap."""
    a, b = make_report(40), make_report(40)
    b.ops[0].name = "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>"
    b.ops[1].module = "model.encoder.layers.11.attention.self_attention.query_key_value.lora_A.default.base_layer"
    for op in b.ops[:5]:
        op.time_s *= 3
    b.summary.total_time_s = sum(op.time_s for op in b.ops)
    labels = ("/home/ci/runs/2026-12-01/nightly/" + "llama_70b_fsdp_" * 6 + "/report.json",
              "/home/ci/runs/2026-12-02/nightly/" + "llama_70b_fsdp_" * 6 + "/report.json")
    driver.set_window_size(1280, 900)
    try:
        open_page(driver, tmp_path, render_diff_html(diff_reports(a, b, *labels)), "diff_1280.html")
        assert console_problems(driver) == []
        width, inner = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert inner == 1280 and width <= inner
        scrolls = driver.execute_script("return Array.from(document.querySelectorAll('.table-scroll'))"
                                        ".map(function (e) { return [e.scrollWidth, e.clientWidth]; })")
        assert len(scrolls) == 3 and all(sw <= cw for sw, cw in scrolls), scrolls
    finally:
        driver.set_window_size(1400, 1000)
