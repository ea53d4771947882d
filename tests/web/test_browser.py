"""Real-browser tests: Playwright driving Debian's Chromium (installed by `make browser`, which
`make test` runs). They open a report of a real run and the served leaderboard, check that the
plots are drawn, that sorting works and that a hostile answer stays inert, and save screenshots
to test-artifacts/ (or $ROBUSTEVAL_TEST_ARTIFACTS)."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from robusteval.report.render import write_report
from robusteval.web.server import make_server

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("ROBUSTEVAL_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts"))


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        if os.environ.get("ROBUSTEVAL_REQUIRE_BROWSER"):
            pytest.fail("Debian's chromium is not installed and CI requires the browser tests")
        pytest.skip("Debian's chromium is not installed: run `make browser` (CI does)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


def test_report_draws_plots_and_hostile_answer_stays_inert(browser, hostile_run):
    files = write_report(hostile_run)
    page, errors = _page(browser)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(files.html.as_uri())
    plots = page.locator("img.plot")
    assert plots.count() >= 2
    widths = page.eval_on_selector_all("img.plot", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 100 for w in widths), widths  # every plot decoded and drawn
    assert page.evaluate("window.__pwned") is None  # neither the <script> nor onerror= ran
    assert not dialogs and not errors
    page.locator("details.item").first.locator("summary").click()
    assert page.get_by_text("<script>window.__pwned = 1</script>", exact=False).first.is_visible()
    assert page.locator("td.answer script, td.answer img, td.prompt img").count() == 0
    page.fill("#filter", "no item has this text")
    assert page.locator("details.item:visible").count() == 0
    page.fill("#filter", "")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def _runs_with_accuracy(real_run: Path, tmp_path: Path, accuracy: dict[str, float], *, n: int,
                        samples: bool = True) -> Path:
    """Copies of a real run under tmp/runs, one per name, each with its order accuracy set (CI +- 0.05)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for run_id, value in accuracy.items():
        shutil.copytree(real_run, runs / run_id)
        if not samples:
            (runs / run_id / "samples.jsonl").unlink()
        results = json.loads((runs / run_id / "results.json").read_text())
        results["metrics"]["llamacpp"]["order"]["accuracy"] = {"value": value, "ci_low": value - 0.05,
                                                               "ci_high": value + 0.05, "n": n}
        (runs / run_id / "results.json").write_text(json.dumps(results))
    return runs


def test_leaderboard_sorts_filters_and_links_to_reports(browser, real_mcq_run, tmp_path):
    # three rows with known values to sort (the real run's own accuracy may be anything, 0 included)
    runs = _runs_with_accuracy(real_mcq_run, tmp_path, {"real": 0.5, "low": 0.05, "high": 0.95}, n=3)
    server = make_server(runs, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page, errors = _page(browser)
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        # exactly "order accuracy" (the sort mark aside): "order accuracy (valid replies only)" is another column
        column = page.locator("table.leaderboard th", has_text=re.compile(r"^\s*order accuracy\W*$"))
        index = page.locator("table.leaderboard th").all_inner_texts().index(column.inner_text())

        def runs_in_order():
            return [row.locator("td").nth(2).inner_text() for row in page.locator("table.leaderboard tbody tr").all()]

        column.click()  # best first
        order = runs_in_order()
        assert order[0] == "high" and order[-1] == "low"
        column.click()  # then ascending
        assert runs_in_order()[0] == "low" and runs_in_order()[-1] == "high"
        values = [float(v) for v in page.eval_on_selector_all(
            f"table.leaderboard tbody tr td:nth-child({index + 1})", "cells => cells.map(c => c.dataset.value)")]
        assert values == sorted(values)
        page.fill("#filter", "high")
        assert page.locator("table.leaderboard tbody tr:visible").count() == 1
        page.fill("#filter", "")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "leaderboard.png"), full_page=True)
        page.locator("table.leaderboard a", has_text="llamacpp").first.click()
        page.wait_for_load_state()
        assert "Headline metrics" in page.content()
        widths = page.eval_on_selector_all("img.plot", "imgs => imgs.map(i => i.naturalWidth)")
        assert widths and all(w > 100 for w in widths)
        assert not errors
    finally:
        server.shutdown()
        server.server_close()


def test_leaderboard_ranks_inseparable_models_together(browser, real_mcq_run, tmp_path):
    """Three models, two of which cannot be told apart: they share rank 1, the third is 3rd."""
    # without samples (identical copies would make every pair inseparable): ranked by intervals
    runs = _runs_with_accuracy(real_mcq_run, tmp_path, {"mid": 0.88, "weak": 0.30, "best": 0.90}, n=200,
                               samples=False)
    server = make_server(runs, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page, errors = _page(browser)
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.locator("table.leaderboard th", has_text="rank").click()  # best rank first
        shown = [(row.locator("td").nth(0).inner_text(), row.locator("td").nth(2).inner_text())
                 for row in page.locator("table.leaderboard tbody tr").all()]
        assert sorted(shown[:2]) == [("=1", "best"), ("=1", "mid")] and shown[2] == ("3", "weak")
        assert "cannot be told apart" in page.locator("table.leaderboard th", has_text="rank").get_attribute("title")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "leaderboard-ties.png"), full_page=True)
        assert not errors
    finally:
        server.shutdown()
        server.server_close()
