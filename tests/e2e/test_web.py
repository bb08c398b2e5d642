"""memoryctl web as a process, in a real headless Chromium (Debian's chromium and
chromium-driver, through selenium): the page loads, a search renders memory_explain's
trace, a memory shows its file, links and history; a screenshot is kept in
tests/artifacts/. Without the token (or from another Host) the answer is 403."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from tests.debian import require

ARTIFACTS = Path(os.environ.get("MEMORYD_TEST_ARTIFACTS",
                                Path(__file__).parents[1] / "artifacts"))


@contextlib.contextmanager
def running_web(daemon, *flags: str) -> Iterator[tuple[str, str]]:
    """`memoryctl web` as a process: its base URL and token, as it prints them."""
    env = dict(os.environ, MEMORY_HOME=str(daemon.root))
    proc = subprocess.Popen([sys.executable, "-m", "memoryctl", "web", "--listen",
                             "127.0.0.1:0", *flags], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        assert match, f"no URL printed: {line!r} {proc.stderr.read() if proc.poll() else ''}"
        yield match.group(1), match.group(2)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture
def web(daemon):
    with running_web(daemon) as started:
        yield started


def _answer(url: str, headers: dict | None = None, data: bytes | None = None
            ) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def _status(url: str, headers: dict | None = None, data: bytes | None = None) -> int:
    return _answer(url, headers, data)[0]


JSON = {"Content-Type": "application/json"}


def test_the_api_wants_the_token_header_json_and_for_edits_our_origin(web):
    base, token = web
    ours = {"X-Memoryd-Token": token, **JSON}
    # the page is public code: it loads without the token, and sets no cookie
    status, headers = _answer(base + "/?token=" + token)
    assert status == 200 and "Set-Cookie" not in headers
    assert _status(base + "/app.js") == 200
    status, headers = _answer(base + "/favicon.ico")  # what every browser asks for first
    assert status == 200 and headers["Content-Type"] == "image/x-icon"
    # memories only through the API, only with the token in its header
    assert _status(base + "/api/stats", JSON, b"{}") == 403
    assert _status(base + "/api/stats?token=" + token, JSON, b"{}") == 403
    assert _status(base + "/api/stats", {"Cookie": f"memoryd_token={token}", **JSON},
                   b"{}") == 403
    assert _status(base + "/api/stats", {"X-Memoryd-Token": "wrong", **JSON}, b"{}") == 403
    assert _status(base + "/api/stats", ours, b"{}") == 200
    # a body a no-cors request could send (text/plain) is refused even with the token
    assert _status(base + "/api/stats", {"X-Memoryd-Token": token,
                                         "Content-Type": "text/plain"}, b"{}") == 403
    # DNS rebinding: a page that names our port under its own host name gets nothing
    assert _status(base + "/", {"Host": "evil.example:80"}) == 403
    assert _status(base + "/api/stats", {**ours, "Host": "evil.example:80"}, b"{}") == 403
    # read-only by default: the page may not delete
    body = json.dumps({"id": "x"}).encode()
    assert _status(base + "/api/memory_delete", {**ours, "Origin": base}, body) == 403
    # one kept-alive connection: a refused request's body is read, not taken for the next
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=10)
    for headers, want in ((JSON, 403), (ours, 200), (ours, 200)):
        connection.request("POST", "/api/stats", body=b'{"padding": "' + b"x" * 500 + b'"}',
                           headers=headers)
        answer = connection.getresponse()
        assert (answer.status, answer.getheader("Content-Type")) == (want, "application/json")
        answer.read()
    connection.close()


def _chromium():
    """A headless Chromium driven by selenium."""
    chromium, chromedriver = require("chromium"), require("chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1400,1800"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def _loaded(driver, base: str, token: str):
    """The page opened with its token and every section loaded; a wait to go on with."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    driver.get(f"{base}/?token={token}")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
        "data-loaded") == "yes")
    return wait


def test_the_page_searches_and_shows_a_memory_in_chromium(daemon, web):
    driver = _chromium()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready

    a = daemon.call("memory_write", {"content": "Ann drinks green tea every morning",
                                     "category": "people", "tags": ["ann"]})
    b = daemon.call("memory_write", {"content": "Ann's sister Bea lives in Porto",
                                     "category": "people"})
    daemon.call("memory_link", {"source": a["id"], "target": b["id"]})
    daemon.call("memory_update", {"id": a["id"], "content": "Ann drinks green tea daily"})
    base, token = web
    try:
        wait = _loaded(driver, base, token)
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
        assert "Ann's sister Bea lives in Porto" in detail  # its link, by title
        assert "version" in detail and "History" in detail
        assert len(driver.find_elements(By.CSS_SELECTOR, "#link-graph circle")) == 2
        side = driver.find_elements(By.CSS_SELECTOR, "#versions-side td")
        assert [c.text for c in side] == ["Ann drinks green tea every morning",
                                          "Ann drinks green tea daily"]

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "web-view.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        graph = driver.find_element(By.ID, "link-graph")
        shot = ARTIFACTS / "web-links.png"
        assert graph.screenshot(str(shot)) and shot.stat().st_size > 2_000
        driver.find_elements(By.CSS_SELECTOR, "#link-graph circle")[1].click()  # Bea
        wait.until(ready.text_to_be_present_in_element((By.ID, "memory-title"), "Bea"))
        rows = driver.find_elements(By.CSS_SELECTOR, "#trace tr.candidate")

        entities = driver.find_elements(By.CSS_SELECTOR, "#entities tr.entity-row")
        assert [row.text.split("\n")[0].split(" ")[0] for row in entities] == [
            "Ann", "Bea", "Porto"]
        entities[2].click()  # Porto: its memories over time, what is named beside it
        wait.until(ready.text_to_be_present_in_element((By.ID, "entity-name"), "Porto"))
        assert "lives in Porto" in driver.find_element(By.ID, "entity-memories").text
        assert "Bea" in driver.find_element(By.ID, "detail").text
        shot = ARTIFACTS / "web-entity.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        # the page's own API calls without the cookie or header are refused
        assert driver.execute_script(
            "return fetch('/api/stats', {method: 'POST', credentials: 'omit'})"
            ".then(r => r.status)") == 403
    finally:
        driver.quit()


def test_the_stores_link_graph_and_a_projects_facts_in_chromium(daemon, web):
    """Logseq's documentation graph ingested: the Links section draws the most linked
    pages, grouped by category; a node opens its memory. A project's facts over time,
    the replaced one struck through."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready

    from tests.ingest.test_sources import LOGSEQ_DOCS

    if not LOGSEQ_DOCS.is_dir():
        pytest.skip("the Logseq docs graph is not here")
    with daemon.client(timeout=300) as c:
        c.call("memory_ingest", {"source": "logseq", "path": str(LOGSEQ_DOCS)})
        for text in ("We deploy with Jenkins.", "We switched from Jenkins to GitHub Actions."):
            c.call("memory_add", {"text": text, "scope": "project:demo-0b6c2f3e"})
    driver = _chromium()
    base, token = web
    try:
        wait = _loaded(driver, base, token)
        nodes = driver.find_elements(By.CSS_SELECTOR, "#links circle.store-link")
        assert len(nodes) == 150
        assert len(driver.find_elements(By.CSS_SELECTOR, "#links line")) > 150
        assert "linked memories" in driver.find_element(By.ID, "links-summary").text
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "web-link-graph.png"
        graph = driver.find_element(By.ID, "links")
        driver.execute_script("arguments[0].scrollIntoView()", graph)
        assert graph.screenshot(str(shot)) and shot.stat().st_size > 10_000
        driver.execute_script(
            "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", nodes[0])
        wait.until(ready.presence_of_element_located((By.ID, "memory-title")))
        assert driver.find_element(By.ID, "memory-title").text
        project = driver.find_element(By.CSS_SELECTOR, ".project-link")
        driver.execute_script("arguments[0].scrollIntoView()", project)  # looking there
        project.click()
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#project-facts li")))
        # The project's page is shown where the user is looking, not far up the page.
        wait.until(lambda d: d.execute_script(
            "const r = document.getElementById('project-name').getBoundingClientRect();"
            "return r.top >= 0 && r.bottom <= window.innerHeight;"))
        facts = driver.find_elements(By.CSS_SELECTOR, "#project-facts li")
        assert [f.get_attribute("class") for f in facts] == ["superseded", ""]
        assert "GitHub Actions" in facts[1].text and "(superseded" in facts[0].text
        shot = ARTIFACTS / "web-project.png"
        assert driver.find_element(By.ID, "detail").screenshot(str(shot))
    finally:
        driver.quit()


def test_paging_creating_a_note_and_looking_without_counting_in_chromium(daemon):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    for n in range(55):
        daemon.call("memory_write", {"content": f"# Note {n}\n\nbody {n}",
                                     "category": "knowledge"})
    with running_web(daemon, "--allow-edit") as (base, token):
        driver = _chromium()
        try:  # a list re-drawn under a look is looked at again
            wait = WebDriverWait(driver, 60, ignored_exceptions=[StaleElementReferenceException])
            driver.get(f"{base}/?token={token}")
            wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
                "data-loaded") == "yes")
            rows = "#memories tr.memory-row"
            assert len(driver.find_elements(By.CSS_SELECTOR, rows)) == 50
            headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#memories th")]
            assert headers[:3] == ["id", "scope", "category"]
            assert driver.find_elements(By.CSS_SELECTOR, rows)[0].find_element(
                By.CSS_SELECTOR, "td.scope").text == "global"
            assert driver.find_element(By.ID, "page-info").text == "1–50 of 55"
            driver.find_element(By.ID, "page-next").click()
            wait.until(ready.text_to_be_present_in_element((By.ID, "page-info"), "51–55"))
            assert len(driver.find_elements(By.CSS_SELECTOR, rows)) == 5
            assert driver.find_elements(By.CSS_SELECTOR, rows)[-1].text.endswith("Note 0")
            driver.find_element(By.CSS_SELECTOR, "#f-order option[value=oldest]").click()
            driver.find_element(By.CSS_SELECTOR, "#filters button").click()  # page 1 again
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, rows)[0].text.endswith(
                "Note 0"))
            assert driver.find_element(By.ID, "page-info").text == "1–50 of 55"
            driver.find_element(By.CSS_SELECTOR, "#f-order option[value=newest]").click()
            driver.find_element(By.CSS_SELECTOR, "#filters button").click()
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, rows)[0].text.endswith(
                "Note 54"))
            driver.find_element(By.ID, "new-content").send_keys(
                "# Seed order\n\nTomatoes from the co-op.")
            driver.find_element(By.CSS_SELECTOR, "#new-category option[value=''] ~ "
                                "option:nth-of-type(6)").click()
            driver.find_element(By.CSS_SELECTOR, "#create-form button").click()
            wait.until(ready.text_to_be_present_in_element((By.ID, "memory-title"),
                                                           "Seed order"))
            assert driver.find_element(By.ID, "page-info").text == "1–50 of 56"
            made = daemon.call("memory_list", {"limit": 1})["memories"][0]
            assert made["title"] == "Seed order" and made["access_count"] == 0
            driver.find_elements(By.CSS_SELECTOR, rows)[1].click()  # looked at, not used
            wait.until(ready.text_to_be_present_in_element((By.ID, "memory-title"), "Note"))
            looked = daemon.call("memory_list", {"limit": 2})["memories"][1]
            assert looked["access_count"] == 0
            shot = ARTIFACTS / "web-paging.png"
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        finally:
            driver.quit()


HOSTILE = """<!doctype html><title>loading</title><script>
const base = "BASE", id = "ID", out = {};
const json = {"Content-Type": "application/json"};
async function attempt(name, url, init) {
  try { const r = await fetch(url, init); out[name] = r.type === "opaque" ? "opaque"
        : r.status + " " + (await r.text()).slice(0, 200); }
  catch (e) { out[name] = "blocked"; }
}
(async () => {
  await attempt("delete_no_cors", base + "/api/memory_delete", {method: "POST",
    mode: "no-cors", credentials: "include", body: JSON.stringify({id})});
  await attempt("delete_cors", base + "/api/memory_delete", {method: "POST",
    credentials: "include", headers: json, body: JSON.stringify({id})});
  await attempt("read", base + "/api/memory_list", {method: "POST",
    credentials: "include", headers: {...json, "X-Memoryd-Token": "a guess"}, body: "{}"});
  document.body.dataset.out = JSON.stringify(out);
  document.title = "done";
})();
</script><body></body>"""


def test_a_page_on_another_local_port_can_neither_read_nor_delete(daemon):
    """A browser that has the web view open (with --allow-edit) visits a page served by
    another program on 127.0.0.1: that page's requests carry no token (no cookie holds
    it), cannot send the page's header without a preflight this server refuses, and a
    no-cors delete is refused for its body's type and its Origin."""
    chromium, chromedriver = require("chromium"), require("chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    secret = daemon.call("memory_write", {"content": "The spare key is under the blue pot",
                                          "category": "knowledge"})
    with running_web(daemon, "--allow-edit") as (base, token):
        page = HOSTILE.replace("BASE", base).replace("ID", secret["id"]).encode()

        class Hostile(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: object) -> None:
                pass

        other = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
        Thread(target=other.serve_forever, daemon=True).start()
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync",
                     "--disable-dev-shm-usage"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(chromedriver), options=options)
        try:
            wait = WebDriverWait(driver, 60)
            driver.get(f"{base}/?token={token}")  # the user has the web view open
            wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
                "data-loaded") == "yes")
            cookies = driver.get_cookies()
            driver.get(f"http://127.0.0.1:{other.server_address[1]}/")
            wait.until(lambda d: d.title == "done")
            out = json.loads(driver.find_element(By.TAG_NAME, "body").get_attribute(
                "data-out"))
        finally:
            driver.quit()
            other.shutdown()
    assert daemon.call("memory_read", {"id": secret["id"]})["content"].startswith(
        "The spare key"), f"deleted from another port: {out}"
    assert "blue pot" not in json.dumps(out), f"read from another port: {out}"
    assert out["read"] in ("blocked", "opaque") or out["read"].startswith("403"), out
    assert cookies == [], "no cookie carries the token"
