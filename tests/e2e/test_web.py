"""memoryctl web as a process, in a real headless Chromium (Debian's chromium and
chromium-driver, through selenium): the page loads, a search renders memory_explain's
trace, a memory shows its file, links and history; a screenshot is kept in
tests/artifacts/. Without the token (or from another Host) the answer is 403."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.debian import require

ARTIFACTS = Path(os.environ.get("MEMORYD_TEST_ARTIFACTS",
                                Path(__file__).parents[1] / "artifacts"))


@pytest.fixture
def web(daemon):
    env = dict(os.environ, MEMORY_HOME=str(daemon.root))
    proc = subprocess.Popen([sys.executable, "-m", "memoryctl", "web", "--listen",
                             "127.0.0.1:0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
    assert match, f"no URL printed: {line!r} {proc.stderr.read() if proc.poll() else ''}"
    yield match.group(1), match.group(2)
    proc.terminate()
    proc.wait(30)


def _status(url: str, headers: dict | None = None, data: bytes | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_without_the_token_or_from_another_host_it_is_403(web):
    base, token = web
    assert _status(base + "/") == 403
    assert _status(base + "/?token=wrong") == 403
    assert _status(base + "/api/stats", data=b"{}") == 403
    assert _status(base + "/?token=" + token) == 200
    assert _status(base + "/api/stats", {"X-Memoryd-Token": token}, b"{}") == 200
    # DNS rebinding: a page that names our port under its own host name gets nothing
    assert _status(base + "/?token=" + token, {"Host": "evil.example:80"}) == 403
    # read-only by default: the page may not delete
    assert _status(base + "/api/memory_delete", {"X-Memoryd-Token": token},
                   json.dumps({"id": "x"}).encode()) == 403


def test_the_page_searches_and_shows_a_memory_in_chromium(daemon, web):
    chromium, chromedriver = require("chromium"), require("chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    a = daemon.call("memory_write", {"content": "Ann drinks green tea every morning",
                                     "category": "people", "tags": ["ann"]})
    b = daemon.call("memory_write", {"content": "Ann's sister Bea lives in Porto",
                                     "category": "people"})
    daemon.call("memory_link", {"source": a["id"], "target": b["id"]})
    daemon.call("memory_update", {"id": a["id"], "content": "Ann drinks green tea daily"})
    base, token = web
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1400,1800"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        wait = WebDriverWait(driver, 60)
        driver.get(f"{base}/?token={token}")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
            "data-loaded") == "yes")
        assert driver.find_element(By.ID, "total").text == "2"
        assert len(driver.find_elements(By.CSS_SELECTOR, "#memories tr.memory-row")) == 2
        assert driver.find_element(By.ID, "mode").text == "read-only"
        assert "?token" not in driver.current_url  # taken out of the address bar

        box = driver.find_element(By.ID, "search")
        box.send_keys("what does Ann drink", Keys.ENTER)
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#trace tr.candidate")))
        rows = driver.find_elements(By.CSS_SELECTOR, "#trace tr.candidate")
        assert len(rows) == 2
        assert "green tea" in rows[0].text and "kept" in rows[0].get_attribute("class")
        assert "memories searched" in driver.find_element(By.ID, "search-summary").text

        rows[0].click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "memory-content"),
                                                       "green tea daily"))
        detail = driver.find_element(By.ID, "detail").text
        assert b["id"][:8] in detail  # its link
        assert "version" in detail and "History" in detail
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "web-view.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        # the page's own API calls without the cookie or header are refused
        assert driver.execute_script(
            "return fetch('/api/stats', {method: 'POST', credentials: 'omit'})"
            ".then(r => r.status)") == 403
    finally:
        driver.quit()
