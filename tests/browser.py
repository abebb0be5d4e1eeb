"""A real browser for the tests: headless Chromium driven through chromedriver's W3C
WebDriver protocol (plain HTTP and JSON, spoken here with httpx), so a test loads a page
as a person's browser would, follows links, types into a form and takes screenshots.

Debian's ``chromium`` and ``chromium-driver`` packages (tests/run.sh installs them);
:func:`available` says why not when they are missing, and the browser tests skip with it
outside CI. No Selenium: the handful of endpoints used here are the protocol's own
(https://www.w3.org/TR/webdriver2/), and a dependency would earn nothing.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

# The W3C element reference key (WebDriver, "web element identifier").
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"

PHONE = (412, 915)  # CSS pixels of a common phone, portrait
LAPTOP = (1280, 800)


def _binary(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def available() -> str | None:
    """None when a headless Chromium can be driven here; else why not, in one line."""
    if _binary("chromium", "chromium-browser", "google-chrome") is None:
        return "no chromium on this machine (Debian: apt install chromium chromium-driver)"
    if _binary("chromedriver") is None:
        return "no chromedriver on this machine (Debian: apt install chromium-driver)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BrowserError(Exception):
    pass


class Element:
    """One element of the page, as WebDriver names it."""

    def __init__(self, browser: Browser, ref: str):
        self.browser = browser
        self.ref = ref

    def _call(self, method: str, what: str, body: dict[str, Any] | None = None) -> Any:
        return self.browser._call(method, f"/element/{self.ref}/{what}", body)

    @property
    def text(self) -> str:
        return str(self._call("GET", "text"))

    def attribute(self, name: str) -> str | None:
        value = self._call("GET", f"attribute/{name}")
        return None if value is None else str(value)

    def click(self) -> None:
        self._call("POST", "click", {})

    def type(self, text: str) -> None:
        self._call("POST", "value", {"text": text})

    def find_all(self, css: str) -> list[Element]:
        found = self._call("POST", "elements", {"using": "css selector", "value": css})
        return [Element(self.browser, item[ELEMENT]) for item in found]


class Browser:
    """One headless Chromium session."""

    def __init__(self, driver_url: str, session: str, client: httpx.Client):
        self.driver_url = driver_url
        self.session = session
        self.client = client

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.driver_url}/session/{self.session}{path}"
        answer = self.client.request(method, url, json=body)
        data = answer.json()
        if answer.status_code != 200:
            value = data.get("value", {})
            raise BrowserError(f"{method} {path}: {value.get('error')}: {value.get('message')}")
        return data.get("value")

    def get(self, url: str) -> None:
        """Load ``url`` and wait until the page has loaded (WebDriver's own wait)."""
        self._call("POST", "/url", {"url": url})

    @property
    def url(self) -> str:
        return str(self._call("GET", "/url"))

    @property
    def title(self) -> str:
        return str(self._call("GET", "/title"))

    def source(self) -> str:
        return str(self._call("GET", "/source"))

    def find(self, css: str) -> Element:
        found = self._call("POST", "/element", {"using": "css selector", "value": css})
        return Element(self, found[ELEMENT])

    def find_all(self, css: str) -> list[Element]:
        found = self._call("POST", "/elements", {"using": "css selector", "value": css})
        return [Element(self, item[ELEMENT]) for item in found]

    def script(self, code: str, *args: Any) -> Any:
        """Run ``code`` (a function body) in the page and return its value: how a test
        asks what the page did (a script the page ran would have set a global)."""
        return self._call("POST", "/execute/sync", {"script": code, "args": list(args)})

    def alert(self) -> str | None:
        """The text of an alert the page opened (a script ran), or None."""
        try:
            return str(self._call("GET", "/alert/text"))
        except BrowserError as exc:
            if "no such alert" in str(exc):
                return None
            raise

    def console(self) -> list[str]:
        """What the browser logged since the last call: a Content-Security-Policy
        violation (a script, an inline style refused) is logged here."""
        entries = self._call("POST", "/se/log", {"type": "browser"})
        return [str(entry.get("message", "")) for entry in entries]

    def window(self, width: int, height: int) -> None:
        self._call("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, path: Path) -> Path:
        """The visible part of the page, as PNG."""
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))
        return path

    def wait_for(self, css: str, timeout: float = 15.0) -> Element:
        """The first element matching ``css``, waiting for it with a deadline."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.find_all(css)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise BrowserError(f"no element {css!r} on {self.url} after {timeout:.0f} s")
            time.sleep(0.05)

    def wait_for_url(self, predicate: Any, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            url = self.url
            if predicate(url):
                return url
            if time.monotonic() > deadline:
                raise BrowserError(f"the browser stayed at {url} for {timeout:.0f} s")
            time.sleep(0.05)


@contextmanager
def chromium(size: tuple[int, int] = LAPTOP) -> Iterator[Browser]:
    """A headless Chromium through a chromedriver of its own, both stopped on the way out."""
    why = available()
    if why is not None:
        raise BrowserError(why)
    port = _free_port()
    profile = tempfile.mkdtemp(prefix="feedsync-chromium-")
    log = Path(profile) / "chromedriver.log"
    driver = subprocess.Popen(
        [str(_binary("chromedriver")), f"--port={port}", f"--log-path={log}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    driver_url = f"http://127.0.0.1:{port}"
    client = httpx.Client(timeout=120, trust_env=False)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if client.get(f"{driver_url}/status").json()["value"]["ready"]:
                    break
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            if driver.poll() is not None or time.monotonic() > deadline:
                raise BrowserError(f"chromedriver did not start (its log: {log})")
            time.sleep(0.05)
        args = [
            "--headless=new",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}/profile",
            f"--window-size={size[0]},{size[1]}",
            "--hide-scrollbars",
        ]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        capabilities = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    # an alert stays open for the test to see (a script that ran)
                    "unhandledPromptBehavior": "ignore",
                    "goog:loggingPrefs": {"browser": "ALL"},
                    "goog:chromeOptions": {
                        "binary": _binary("chromium", "chromium-browser", "google-chrome"),
                        "args": args,
                    },
                }
            }
        }
        answer = client.post(f"{driver_url}/session", json=capabilities)
        if answer.status_code != 200:
            raise BrowserError(f"no browser session: {answer.text[:300]}")
        session = answer.json()["value"]["sessionId"]
        browser = Browser(driver_url, session, client)
        try:
            yield browser
        finally:
            with suppress(httpx.HTTPError):
                client.delete(f"{driver_url}/session/{session}")
    finally:
        client.close()
        driver.terminate()
        try:
            driver.wait(timeout=10)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
        shutil.rmtree(profile, ignore_errors=True)
