"""The proofreading page in headless Chromium (Debian's, driven by Playwright; no browser download):
upload a sample, wait for its cues, correct one, save, export, read the exported file.

``SUBEXTRACT_SCREENSHOTS=docs`` also writes the README's screenshots there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pysrt
import pytest

from serve_fixtures import API_KEY, ZH_SAMPLE, Server, upload

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (bash scripts/setup.sh --test)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="needs Debian's chromium (bash scripts/setup.sh --test installs it)")

EDITED = "校对过的字幕"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("web") / "data").start()
    yield server
    server.stop()


@pytest.fixture()
def page():
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
        yield context.new_page()
        browser.close()


def _screenshot(page, name: str) -> None:
    folder = os.environ.get("SUBEXTRACT_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def test_upload_proofread_edit_and_export(server, page, tmp_path):
    page.goto(server.url + "/")
    page.fill("#api-key", API_KEY)
    page.dispatch_event("#api-key", "change")
    page.set_input_files("#file", str(ZH_SAMPLE))
    page.fill("#watchlist", "雄")
    page.click("#submit")
    page.wait_for_selector("#status[data-status=done]", timeout=120_000)
    rows = page.locator("#cues tbody tr")
    rows.first.wait_for()
    assert rows.count() == 5
    confidences = [float(text) for text in page.locator("#cues .confidence").all_inner_texts()]
    assert confidences == sorted(confidences)  # weakest reading first
    assert page.locator("#cues tr.flagged").count() == 1
    page.wait_for_function("[...document.querySelectorAll('#cues img')].every(i => i.complete && i.naturalWidth > 0)",
                           timeout=60_000)

    first = rows.first
    seq = int(first.get_attribute("data-seq"))
    first.locator("textarea.text").fill(EDITED)
    first.locator("input.end").fill(first.locator("input.end").input_value()[:-3] + "000")
    assert page.locator("#cues tr.dirty").count() == 1
    _screenshot(page, "serve-proofreading.png")
    page.click("#save")
    page.wait_for_selector("#saved:has-text('saved 1 cue')")
    assert page.locator("#cues tr.dirty").count() == 0

    with page.expect_download() as download:
        page.click("#export-srt")
    exported = tmp_path / download.value.suggested_filename
    download.value.save_as(exported)
    assert exported.name == "zh_bottom.srt"
    cues = pysrt.open(str(exported), encoding="utf-8")
    assert len(cues) == 5 and cues[seq].text == EDITED
    assert cues[seq].end.milliseconds == 0  # the end time edited to a whole second
    with page.expect_download() as download:
        page.click("#export-ass")
    assert EDITED in Path(download.value.path()).read_text(encoding="utf-8")

    page.reload()  # the edit is stored on the server, not in the page
    page.wait_for_selector("#jobs tbody tr")
    page.click("#jobs tbody tr")
    page.wait_for_selector(f"#cues tr[data-seq='{seq}']")
    assert page.locator(f"#cues tr[data-seq='{seq}'] textarea").input_value() == EDITED


def test_cancel_from_the_page(server, page):
    with server.client() as client:  # keeps the one worker busy, so the page's job waits in the queue
        busy = upload(client, ZH_SAMPLE).json()["id"]
        page.goto(server.url + "/")
        page.fill("#api-key", API_KEY)
        page.dispatch_event("#api-key", "change")
        page.set_input_files("#file", str(ZH_SAMPLE))
        page.click("#submit")
        page.wait_for_selector("#cancel:visible")
        page.click("#cancel")
        page.wait_for_selector("#status[data-status=cancelled]")
        assert page.locator("#cancel").is_hidden()
        client.delete(f"/v1/jobs/{busy}")
