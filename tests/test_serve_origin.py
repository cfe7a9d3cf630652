"""Another site's page against the key-less service, in Debian's headless Chromium (Playwright):
a cross-origin multipart POST (which a browser sends without asking first), a DNS-rebound
``Host``, framing the page; and ``--cors-origin`` letting one named site in."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from serve_fixtures import EN_SAMPLE, REPO, Server, free_port

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (bash scripts/setup.sh --test)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

ATTACK = """<!doctype html><html><body>
<form id="f" method="post" enctype="multipart/form-data" action="{service}/v1/jobs">
<input type="hidden" name="lang" value="en"></form>
<iframe id="frame" src="{service}/"></iframe>
<script>
async function attack() {{
  const video = await (await fetch("/clip.mp4")).blob();  // a real video, from the page's own site
  const form = new FormData();
  form.append("file", video, "clip.mp4");
  form.append("end", "1");
  await fetch("{service}/v1/jobs", {{method: "POST", body: form, mode: "no-cors"}});
  return "sent";
}}
async function asAllowedSite() {{
  const answer = await fetch("{service}/v1/jobs", {{method: "POST", headers: {{"Content-Type": "application/json"}},
                                                  body: JSON.stringify({{url: "ftp://example.com/x.mp4"}})}});
  return [answer.status, (await answer.json()).error];
}}
</script></body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A page on another origin (another port of 127.0.0.1) and a key-less service."""
    folder = tmp_path_factory.mktemp("site")
    port = free_port()
    server = Server(tmp_path_factory.mktemp("origin") / "data", "--cors-origin", f"http://127.0.0.1:{port}/",
                    api_key=None)
    (folder / "allowed.html").write_text(ATTACK.format(service=server.url))
    other = Server(tmp_path_factory.mktemp("origin-closed") / "data", api_key=None)
    (folder / "attack.html").write_text(ATTACK.format(service=other.url))
    shutil.copy(EN_SAMPLE, folder / "clip.mp4")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    server.start()
    other.start()
    yield f"http://127.0.0.1:{port}", server, other
    pages.shutdown()
    server.stop()
    other.stop()


@pytest.fixture()
def page():
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's chromium (bash scripts/setup.sh --test installs it)")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield browser.new_context().new_page()
        browser.close()


def _jobs(server: Server) -> list:
    return httpx.get(f"{server.url}/v1/jobs").json()["jobs"]


def test_another_sites_page_creates_no_job_and_cannot_frame_the_page(site, page):
    origin, _, service = site
    page.goto(f"{origin}/attack.html")
    assert page.evaluate("attack()") == "sent"  # a real video, posted without a preflight
    assert _jobs(service) == []
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")  # a plain form post, as old sites do
    assert "may not change anything here" in page.content()
    page.goto(f"{origin}/attack.html")
    page.wait_for_timeout(500)
    frame = next(frame for frame in page.frames if frame != page.main_frame)
    assert frame.url != f"{service.url}/" or "subextract" not in frame.content()  # refused: frame-ancestors 'none'
    headers = httpx.get(f"{service.url}/").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"] and headers["x-frame-options"] == "DENY"


def test_a_rebound_host_name_is_refused(site):
    _, _, service = site
    rebound = httpx.get(f"{service.url}/v1/jobs", headers={"Host": f"attacker.example:{service.port}"})
    assert rebound.status_code == 421 and "attacker.example" in rebound.json()["error"]
    for name in ("127.0.0.1", "localhost", "[::1]"):
        assert httpx.get(f"{service.url}/v1/jobs", headers={"Host": f"{name}:{service.port}"}).status_code == 200


def test_a_site_named_by_cors_origin_may_call_the_api(site, page):
    origin, service, _ = site
    page.goto(f"{origin}/allowed.html")
    status, error = page.evaluate("asAllowedSite()")
    assert status == 400 and "not allowed" in error  # its request reached the route (and the URL was checked)
    page.goto(f"{origin}/allowed.html")
    assert page.evaluate("attack()") == "sent"
    assert [job["name"] for job in _jobs(service)] == ["clip.mp4"]  # the opted-in site's upload is a job


def test_the_api_is_not_served_to_the_network_without_a_key(tmp_path):
    run = subprocess.run([sys.executable, "-m", "subextract", "serve", "--host", "0.0.0.0", "--data",
                          str(tmp_path / "data")], capture_output=True, text=True, timeout=60, cwd=REPO,
                         env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "without a key" in run.stderr and len(run.stderr.splitlines()) == 1
