"""The proofreading page in headless Chromium (Debian's, driven by Playwright; no browser download):
upload, cues arriving live, the player, pictures, delete/merge/split/undo, the unsaved-changes
guard, a refused row, the banner of a truncated video, a phone-sized viewport, scripts that need
their own fonts and direction, and axe-core's accessibility rules.

``SUBEXTRACT_SCREENSHOTS=docs`` also writes the documentation's screenshots there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pysrt
import pytest

from serve_fixtures import API_KEY, REPO, ZH_SAMPLE, module_server, upload, wait_for

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (bash scripts/setup.sh --test)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AXE = REPO / ".venv" / "share" / "subextract" / "axe-core" / "axe.min.js"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="needs Debian's chromium (bash scripts/setup.sh --test installs it)")

EDITED = "校对过的字幕"


server = module_server("web")


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield browser
        browser.close()


@pytest.fixture()
def page(browser):
    # Playwright's waits evaluate strings in the page, which the service's CSP forbids (no eval);
    # test_the_page_runs_under_the_content_policy checks the page itself under that policy.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True, bypass_csp=True)
    context.add_init_script(f"localStorage.setItem('subextract-key', {API_KEY!r})")
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, errors


@pytest.fixture()
def done_job(server) -> str:
    """A fresh finished job of the Chinese sample (five cues, the first flagged)."""
    with server.client() as client:
        job_id = upload(client, ZH_SAMPLE, watchlist="雄").json()["id"]
        assert wait_for(client, job_id)["status"] == "done"
    return job_id


def open_job(page, server, job_id: str) -> None:
    page.goto(f"{server.url}/#job={job_id}")
    page.wait_for_selector("#cues li .actions", timeout=120_000)
    # Pictures load as they come near the view: on a phone, below a list of earlier jobs, the first
    # one is scrolled to.
    page.wait_for_function("(i => { if (i) i.scrollIntoView(); return i && i.complete && i.naturalWidth; })"
                           "(document.querySelector('#cues img'))", timeout=120_000, polling=200)


def row(page, seq: int):
    return page.locator(f"#cues li[data-seq='{seq}']")


def stored_srt(server, job_id: str) -> list[str]:
    with server.client() as client:
        return [cue.text for cue in pysrt.from_string(client.get(f"/v1/jobs/{job_id}/subtitles.srt").text)]


def _screenshot(page, name: str) -> None:
    folder = os.environ.get("SUBEXTRACT_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


@pytest.fixture(scope="module")
def long_video(tmp_path_factory) -> Path:
    """The Chinese sample played six times over (two minutes): long enough to watch cues arrive."""
    from subextract.stages.probe import ffmpeg_exe

    out = tmp_path_factory.mktemp("long") / "zh_six_times.mp4"
    subprocess.run([ffmpeg_exe(), "-v", "error", "-stream_loop", "5", "-i", str(ZH_SAMPLE), "-c", "copy", str(out)],
                   check=True)
    return out


def test_upload_and_watch_cues_arrive_live_with_flags(server, page, long_video):
    page.goto(server.url + "/")
    # Each cue row that appears notes the job's status at that moment.
    page.evaluate("""() => { window.arrivals = [];
        new MutationObserver(() => document.querySelectorAll('#cues li:not([data-noted])').forEach(li => {
            li.dataset.noted = '1'; window.arrivals.push(document.querySelector('#status').dataset.status); }))
          .observe(document.querySelector('#cues'), {childList: true}); }""")
    page.set_input_files("#file", str(long_video))
    page.fill("#watchlist", "雄")
    page.click("#submit")
    page.wait_for_selector("#cues li .readonly-note", timeout=120_000)
    assert page.locator("#cues li").first.locator("textarea").get_attribute("readonly") is not None
    page.wait_for_selector("#status[data-status=done]", timeout=240_000)
    page.wait_for_selector("#cues li .actions")
    assert "running" in page.evaluate("window.arrivals")  # rows came while the job ran
    flagged = page.locator("#cues li.flagged")
    assert flagged.count() == 6 and "flagged: 雄" in flagged.first.inner_text()
    confidences = [float(t.rsplit(" ", 1)[1]) for t in page.locator("#cues .cue-head .badge:first-of-type").all_inner_texts()]
    assert confidences == sorted(confidences)  # weakest reading first


def test_edit_save_and_export(server, page, done_job, tmp_path):
    open_job(page, server, done_job)
    first = page.locator("#cues li").first
    seq = int(first.get_attribute("data-seq"))
    first.locator("textarea.text").fill(EDITED)
    first.locator("input.end").fill(first.locator("input.end").input_value()[:-3] + "000")
    assert page.locator("#cues li.dirty").count() == 1
    assert page.locator("#save-status").inner_text() == "1 unsaved change"
    _screenshot(page, "serve-proofreading.png")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#save-status:has-text('All changes saved')")
    assert page.locator("#cues li.dirty").count() == 0

    with page.expect_download() as download:
        page.click("#export-srt")
    exported = tmp_path / download.value.suggested_filename
    download.value.save_as(exported)
    assert exported.name == "zh_bottom.srt"
    cues = pysrt.open(str(exported), encoding="utf-8")
    assert len(cues) == 5 and cues[seq].text == EDITED and cues[seq].end.milliseconds == 0

    page.reload()  # the edit is stored on the server, not in the page
    page.wait_for_selector(f"#cues li[data-seq='{seq}'] .actions")
    assert row(page, seq).locator("textarea").input_value() == EDITED


def test_clicking_a_cue_plays_it_and_the_list_follows_playback(server, page, done_job):
    open_job(page, server, done_job)
    assert page.evaluate("document.querySelector('#player').canPlayType('video/mp4; codecs=\"avc1.42E01E\"')")
    page.wait_for_function("document.querySelector('#player').readyState >= 1")
    row(page, 2).locator("button.play").click()
    page.wait_for_function("!document.querySelector('#player').paused")
    page.wait_for_selector("#cues li[data-seq='2'].current")
    assert row(page, 2).get_attribute("aria-current") == "true"
    # It stops at the cue's end, not further on.
    end = float(row(page, 2).locator("input.end").input_value().rsplit(":", 1)[1])
    page.wait_for_function("document.querySelector('#player').paused", timeout=15_000)
    assert end - 0.2 <= page.evaluate("document.querySelector('#player').currentTime") <= end + 0.5
    # Ctrl+Enter in a cue's text plays that cue.
    row(page, 0).locator("textarea").focus()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#cues li[data-seq='0'].current")


def test_a_picture_is_the_text_lines_and_enlarges(server, page, done_job):
    open_job(page, server, done_job)
    picture = row(page, 0).locator(".picture img")
    natural = picture.evaluate("i => [i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().height]")
    assert natural[1] >= 55 and natural[2] >= 55  # the 55 px line shown at its own size at least
    row(page, 0).locator(".picture").click()
    page.wait_for_function("document.querySelector('#zoom').open && document.querySelector('#zoom-image').width > 0")
    assert page.evaluate("document.querySelector('#zoom-image').width") == 2 * natural[0]
    page.click("#zoom-band")
    page.wait_for_function("document.querySelector('#zoom-image').naturalWidth === 1280")
    page.keyboard.press("Escape")
    assert not page.evaluate("document.querySelector('#zoom').open")


def test_delete_merge_split_insert_and_undo(server, page, done_job):
    open_job(page, server, done_job)
    page.click(".tools summary")
    page.select_option("#order", "time")
    texts = stored_srt(server, done_job)

    row(page, 4).get_by_role("button", name="Delete (cue 5)").click()
    page.wait_for_function("document.querySelectorAll('#cues li').length === 4")
    assert stored_srt(server, done_job) == texts[:4]

    row(page, 0).get_by_role("button", name="Merge with next (cue 1)").click()
    page.wait_for_function("document.querySelectorAll('#cues li').length === 3")
    assert stored_srt(server, done_job)[0] == texts[0] + "\n" + texts[1]

    text = row(page, 0).locator("textarea")
    text.focus()
    text.evaluate(f"t => t.setSelectionRange({len(texts[0]) + 1}, {len(texts[0]) + 1})")
    row(page, 0).get_by_role("button", name="Split at caret (cue 1)").click()
    page.wait_for_function("document.querySelectorAll('#cues li').length === 4")
    assert stored_srt(server, done_job)[:2] == texts[:2]

    row(page, 0).get_by_role("button", name="Insert after (cue 1)").click()
    page.wait_for_function("document.querySelectorAll('#cues li').length === 5")
    assert stored_srt(server, done_job)[1] == "…"

    for count in (4, 3, 4, 5):  # undo the insert, the split, the merge, the delete
        page.click("#undo")
        page.wait_for_function(f"document.querySelectorAll('#cues li').length === {count}")
    assert stored_srt(server, done_job) == texts
    page.wait_for_selector("#undo:disabled")


def test_undo_takes_back_an_unsaved_edit_first(server, page, done_job):
    open_job(page, server, done_job)
    text = row(page, 1).locator("textarea")
    before = text.input_value()
    text.fill("打错的字")
    text.blur()
    page.keyboard.press("Control+z")
    assert text.input_value() == before and page.locator("#cues li.dirty").count() == 0


def test_unsaved_changes_are_guarded(server, page, done_job):
    open_job(page, server, done_job)
    row(page, 1).locator("textarea").fill("还没保存")
    page.locator("#jobs button").nth(1).click()  # another job
    page.wait_for_selector("#unsaved[open]")
    assert "1 cue has unsaved changes" in page.inner_text("#unsaved-text")
    page.click("#unsaved-cancel")
    assert row(page, 1).locator("textarea").input_value() == "还没保存"
    page.click("#export-srt")  # export asks too
    page.wait_for_selector("#unsaved[open]")
    page.click("#unsaved-cancel")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    page.close(run_before_unload=True)
    page.wait_for_timeout(500)
    assert dialogs == ["beforeunload"]
    assert "还没保存" not in stored_srt(server, done_job)


def test_a_refused_row_is_marked_and_nothing_is_half_saved(server, page, done_job):
    open_job(page, server, done_job)
    page.click(".tools summary")
    page.select_option("#order", "time")
    row(page, 0).locator("textarea").fill("这一行没问题")
    row(page, 1).locator("input.end").fill("0:00:00.500")  # ends before it starts
    page.click("#save")
    page.wait_for_selector("#cues li[data-seq='1'].refused")
    assert "must end after it starts" in row(page, 1).locator(".refusal").inner_text()
    assert row(page, 1).locator("input.end").get_attribute("aria-invalid") == "true"
    assert "refused" in page.inner_text("#save-status")
    assert row(page, 0).locator(".unsaved").is_visible()  # still pending, not stored
    assert "这一行没问题" not in stored_srt(server, done_job)

    # A cue changed elsewhere since the page loaded it: a 409 on that row.
    with server.client() as client:
        client.patch(f"/v1/jobs/{done_job}/cues/1", json={"text": "别人改的"})
    row(page, 1).locator("input.end").fill("0:00:08.000")
    page.click("#save")
    page.wait_for_selector("#cues li[data-seq='1'] .refusal:has-text('changed since you loaded it')")
    row(page, 1).get_by_role("button", name="Discard my change").click()
    page.wait_for_function("document.querySelector(\"#cues li[data-seq='1'] textarea\").value === '别人改的'")
    page.click("#save")
    page.wait_for_selector("#save-status:has-text('All changes saved')")
    assert stored_srt(server, done_job)[:2] == ["这一行没问题", "别人改的"]


def test_a_truncated_video_shows_its_warning_on_the_job_and_its_cues(server, page, truncated_faststart):
    with server.client() as client:
        job_id = upload(client, truncated_faststart).json()["id"]
        job = wait_for(client, job_id)
    assert job["complete"] is False and job["warnings"]
    page.goto(f"{server.url}/#job={job_id}")
    banner = page.locator("#banner")
    banner.wait_for()
    assert "Incomplete run" in banner.inner_text() and job["warnings"][0] in banner.inner_text()
    assert page.locator("#jobs button", has_text="zh_truncated_faststart.mp4").inner_text().endswith("⚠")


def test_scripts_render_in_their_direction_and_fonts(server, page, done_job):
    lines = {"zh-Hant": "臺灣的繁體字幕", "zh-Hans": "简体中文字幕", "ar": "مرحبا بالعالم", "th": "สวัสดีชาวโลก"}
    with server.client() as client:
        for index, text in enumerate(lines.values()):
            assert client.post(f"/v1/jobs/{done_job}/cues",
                               json={"start": 30 + index, "end": 30.5 + index, "text": text}).status_code == 201
    open_job(page, server, done_job)
    shown = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#cues textarea')].map(a =>
        [a.value, [a.matches(':dir(rtl)') ? 'rtl' : 'ltr', a.lang]]))""")
    for name, text in lines.items():
        direction, lang = shown[text]
        assert direction == ("rtl" if name == "ar" else "ltr"), text
        assert lang == name.split("-")[0]
        # Drawn with a font that has the script: not as wide as as many characters no font has.
        widths = page.evaluate("""t => { const c = document.createElement('canvas').getContext('2d');
            c.font = '20px sans-serif';
            return [c.measureText(t).width, c.measureText('\\u{10FFFD}'.repeat([...t].length)).width]; }""", text)
        assert widths[0] > 0 and widths[0] != widths[1], text
    _screenshot(page, "serve-scripts.png")


def test_a_390_px_phone_has_no_horizontal_overflow(server, browser, done_job):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                                  has_touch=True, bypass_csp=True)
    context.add_init_script(f"localStorage.setItem('subextract-key', {API_KEY!r})")
    page = context.new_page()
    try:
        open_job(page, server, done_job)
        page.click(".tools summary")
        # Every picture loaded, as it comes into view: the first one still missing is scrolled to
        # until none is (the list may be drawn again while the job's last cues arrive).
        page.wait_for_function("""() => {
            const missing = [...document.querySelectorAll('#cues img')].filter(i => !(i.complete && i.naturalWidth));
            if (missing.length) missing[0].scrollIntoView();
            return missing.length === 0;
        }""", timeout=120_000, polling=200)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        wide = page.evaluate("""[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 390.5)
                                .map(e => e.tagName + '.' + e.className)""")
        assert wide == []
        _screenshot(page, "serve-phone.png")
    finally:
        context.close()


@pytest.mark.skipif(not AXE.exists(), reason="axe-core not installed (bash scripts/setup.sh --test fetches it)")
def test_accessibility_has_no_serious_violations(server, page, done_job):
    open_job(page, server, done_job)
    page.click(".tools summary")
    page.add_script_tag(path=str(AXE))
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    serious = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in results["violations"]
               if v["impact"] in ("serious", "critical")]
    assert serious == []
    page.click("#help-open")  # the help overlay too
    page.wait_for_selector("#help[open]")
    results = page.evaluate("axe.run(document.querySelector('#help'))")
    assert [v["id"] for v in results["violations"] if v["impact"] in ("serious", "critical")] == []


def test_keyboard_help_and_weak_cue_navigation(server, page, done_job):
    open_job(page, server, done_job)
    page.click(".tools summary")
    page.fill("#threshold", "1")  # every reading counts as weak
    page.dispatch_event("#threshold", "change")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Shift+?")
    page.wait_for_selector("#help[open]")
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+ArrowDown")
    first = page.evaluate("document.activeElement.closest('li').dataset.seq")
    page.keyboard.press("Alt+ArrowDown")
    second = page.evaluate("document.activeElement.closest('li').dataset.seq")
    page.keyboard.press("Alt+ArrowUp")
    assert first != second and page.evaluate("document.activeElement.closest('li').dataset.seq") == first


def test_the_page_runs_under_the_content_policy(server, browser, done_job):
    """No bypass here: the page, its pictures (blob: URLs), the player and a save break no rule of
    the service's Content-Security-Policy."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(f"localStorage.setItem('subextract-key', {API_KEY!r}); window.violations = [];"
                            "document.addEventListener('securitypolicyviolation', e => "
                            "window.violations.push(e.violatedDirective + ' ' + e.blockedURI));")
    page = context.new_page()
    try:
        response = page.goto(f"{server.url}/#job={done_job}")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_selector("#cues li .actions")
        page.locator("#cues li img").first.wait_for()
        page.locator("#cues li").first.locator(".picture").click()
        page.wait_for_selector("#zoom[open]")
        page.keyboard.press("Escape")
        page.locator("#cues li").first.locator("button.play").click()
        page.locator("#cues li").first.locator("textarea").fill("在内容策略之下")
        page.click("#save")
        page.wait_for_selector("#save-status:has-text('All changes saved')")
        # The list is drawn again after a save and its pictures fetched anew: wait for one, not a race.
        # A selector, not wait_for_function: newer Chromium runs a string predicate through eval,
        # which this very policy forbids.
        page.locator("#cues img[src^='blob:']").first.wait_for(state="attached")
        assert page.evaluate("window.violations") == []
    finally:
        context.close()


def test_cancel_from_the_page(server, page):
    with server.client() as client:  # keeps the one worker busy, so the page's job waits in the queue
        busy = upload(client, ZH_SAMPLE).json()["id"]
        page.goto(server.url + "/")
        page.set_input_files("#file", str(ZH_SAMPLE))
        page.click("#submit")
        page.wait_for_selector("#cancel:visible")
        page.click("#cancel")
        page.wait_for_selector("#status[data-status=cancelled]")
        assert page.locator("#cancel").is_hidden()
        client.delete(f"/v1/jobs/{busy}")
