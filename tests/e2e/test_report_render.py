"""The onboard report opens offline in headless Chromium without errors.

The page comes from tests/fixtures/onboard/onboard.json, rendered two ways: by the unit test
that renders the fixture (FUSOR_REPORT_OUT), and by `fusor onboard --render-only DIR`.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

import html_render
from conftest import FUSOR, ROOT, run_fusor

FIXTURE = ROOT / "tests" / "fixtures" / "onboard" / "onboard.json"
SECTIONS = ["summary", "breakdown", "roofline", "fusions", "curves", "matrix", "comparison", "plan"]
CHARTS = 4  # op breakdown, roofline, one latency-throughput chart per class (2 in the fixture)


def check_page(html_path, workdir):
    if html_render.find_chromium() is None:
        pytest.fail("chromium is not installed: run scripts/setup")
    rendering = html_render.render(html_path, workdir)
    assert html_render.problems(html_path, rendering) == []
    for section in SECTIONS:
        assert f'id="{section}"' in rendering.dom, section
    assert rendering.dom.count("<svg") == CHARTS
    assert "Baseline vs tuned" in rendering.dom


def test_fixture_report_renders_cleanly(tmp_path):
    unit_tests = pathlib.Path(FUSOR).resolve().parent / "tests" / "fusor_unit_tests"
    if not unit_tests.exists():
        pytest.skip(f"{unit_tests} is not built (ninja fusor_unit_tests)")
    page = tmp_path / "report.html"
    r = subprocess.run([unit_tests, "--gtest_filter=OnboardReport.RendersEverySectionOfTheFixture"],
                       env={**os.environ, "FUSOR_REPORT_OUT": str(page)}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]
    check_page(page, tmp_path)


def test_onboard_render_only(tmp_path):
    if run_fusor("onboard", "--help").returncode != 0:
        pytest.skip("fusor onboard does not exist yet")
    out = tmp_path / "onboard"
    out.mkdir()
    shutil.copy(FIXTURE, out / "onboard.json")
    r = run_fusor("onboard", "--render-only", out)
    assert r.returncode == 0, r.stderr
    check_page(out / "report.html", tmp_path)

    # A broken document is a one-line error, not a crash.
    (out / "onboard.json").write_text('{"model": "m.onnx", "profile": {}}')
    r = run_fusor("onboard", "--render-only", out)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and "profile.before is missing" in r.stderr, r.stderr


def test_checker_finds_broken_pages(tmp_path):
    # The checks above can fail: a console error, a remote image, malformed SVG and a blank page.
    if html_render.find_chromium() is None:
        pytest.fail("chromium is not installed: run scripts/setup")
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("boom")</script>'
                    '<img src="http://example.invalid/x.png"><svg><g><circle r="1"></svg></body></html>')
    found = "\n".join(html_render.problems(page, html_render.render(page, tmp_path)))
    for expected in ["browser log", "boom", "a script", "a src= attribute", "an external address",
                     "svg #0 is not well-formed XML", "the screenshot is blank"]:
        assert expected in found, found
