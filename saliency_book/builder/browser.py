"""Check the rendered book in headless Chromium, over the DevTools protocol.

:func:`check_book` serves ``book/_build/html`` on ``127.0.0.1``, loads every page in a fresh headless
Chromium and reports failed requests, requests that left ``127.0.0.1``, images that did not load,
Python tracebacks, widgets that did not render, mathematics MathJax did not typeset, JavaScript
exceptions and wrong launch buttons (:func:`~saliency_book.builder.launch.launch_problems`); it can
save screenshots. The protocol runs over the browser's websocket (``websocket-client``), one session
per page. :func:`ensure_chromium` installs Debian's Chromium when it is missing and the process is root.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from saliency_book.builder.launch import launch_problems
from saliency_study.paths import REPO_ROOT

__all__ = ["find_chromium", "ensure_chromium", "ChromiumMissing", "Chromium", "serve", "PageReport", "check_book",
           "CHROMIUM_FLAGS"]

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
                  "--disable-extensions", "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage")
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class ChromiumMissing(RuntimeError):
    """No Chromium, and it cannot be installed here."""


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome executable (``$CHROMIUM`` first), or None."""
    env = os.environ.get("CHROMIUM")
    if env and Path(env).is_file():
        return env
    return next(filter(None, map(shutil.which, _CANDIDATES)), None)


def ensure_chromium(*, install: bool = True) -> str:
    """Chromium's path; installs Debian's ``chromium`` and ``chromium-driver`` when missing and root.

    Raises
    ------
    ChromiumMissing
        Not installed and not root (or ``install=False``).
    RuntimeError
        ``apt-get`` failed.
    """
    path = find_chromium()
    if path:
        return path
    if not install or not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise ChromiumMissing("Chromium is not installed and this process is not root; install it with "
                              "'sudo apt-get install -y chromium chromium-driver' (or set CHROMIUM=/path/to/chrome)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    path = find_chromium()
    if not path:
        raise RuntimeError("apt-get installed chromium, but no chromium executable is on PATH")
    return path


# -- a minimal DevTools-protocol client ----------------------------------------------------------

class _CDP:
    """Synchronous DevTools client over one websocket; events are buffered."""

    def __init__(self, ws_url: str, timeout: float = 30.0):
        import websocket  # websocket-client

        self.ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True, max_size=None)
        self._next = 0
        self.events: list[dict] = []

    def _read(self, timeout: float) -> dict | None:
        import websocket

        self.ws.settimeout(max(timeout, 0.01))
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return None

    def call(self, method: str, params: dict | None = None, *, session: str | None = None, timeout: float = 60.0) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self._read(deadline - time.monotonic())
            if m is None:
                continue
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"DevTools {method} failed: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)
        raise TimeoutError(f"DevTools {method}: no answer within {timeout} s")

    def pump(self, seconds: float) -> None:
        """Read events for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = self._read(deadline - time.monotonic())
            if m and "method" in m:
                self.events.append(m)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a dead socket
            self.ws.close()


class Chromium:
    """A headless Chromium with a fresh profile, driven over the DevTools protocol.

    Use as a context manager; :meth:`open` returns a :class:`_Page`.
    """

    def __init__(self, executable: str | None = None, *, width: int = 1280, height: int = 900):
        self.executable = executable or ensure_chromium()
        self.width, self.height = width, height
        self.proc: subprocess.Popen | None = None
        self.profile: tempfile.TemporaryDirectory | None = None
        self.cdp: _CDP | None = None

    def __enter__(self) -> Chromium:
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        args = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile.name}", "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1", f"--window-size={self.width},{self.height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = Path(self.profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
                raise RuntimeError(f"Chromium exited with {self.proc.returncode} before it opened DevTools: {err}")
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise TimeoutError("Chromium did not open its DevTools port within 60 s")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        self.cdp = _CDP(f"ws://127.0.0.1:{port}{path}")
        return self

    def __exit__(self, *exc) -> None:
        if self.cdp:
            with contextlib.suppress(Exception):  # the browser may already be gone
                self.cdp.call("Browser.close", timeout=5)
            self.cdp.close()
        if self.proc:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            if self.proc.stderr:
                self.proc.stderr.close()
        if self.profile:
            self.profile.cleanup()

    def open(self) -> _Page:
        target = self.cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return _Page(self, target, session)


class _Page:
    def __init__(self, browser: Chromium, target: str, session: str):
        self.browser, self.target, self.session = browser, target, session
        self.cdp = browser.cdp
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.resize(browser.height)

    def call(self, method, params=None, timeout=60.0):
        return self.cdp.call(method, params, session=self.session, timeout=timeout)

    def evaluate(self, expression: str, timeout: float = 30.0):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def events(self, pump: float = 0.0) -> list[dict]:
        """The events of this page since the last call (after reading the socket for ``pump`` seconds)."""
        if pump:
            self.cdp.pump(pump)
        mine = [e for e in self.cdp.events if e.get("sessionId") == self.session]
        self.cdp.events = [e for e in self.cdp.events if e.get("sessionId") != self.session]
        return mine

    def navigate(self, url: str, *, ready: str = "true", timeout: float = 60.0, settle: float = 1.0) -> list[dict]:
        """Load ``url``; wait for the load event, then for the JS condition ``ready`` and a quiet network."""
        self.events()
        self.call("Page.navigate", {"url": url})
        events: list[dict] = []
        deadline = time.monotonic() + timeout
        loaded = False
        while time.monotonic() < deadline and not loaded:
            events += (new := self.events(pump=0.2))
            loaded = any(e["method"] == "Page.loadEventFired" for e in new)
        if not loaded:
            raise TimeoutError(f"{url} did not finish loading within {timeout} s")
        self.evaluate("document.querySelectorAll('img[loading=lazy]').forEach(i => { i.loading = 'eager'; }); true")
        # Fetch every declared web font now: a browser loads a font only when a glyph needs it,
        # so a missing one (the widget manager's icon fonts) would otherwise pass unnoticed.
        self.evaluate("Promise.all([...document.fonts].map(f => f.load().catch(() => null))).then(() => true)")
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            events += (new := self.events(pump=0.25))
            if any(e["method"].startswith("Network.") for e in new):
                quiet_since = time.monotonic()
            if time.monotonic() - quiet_since >= settle and self.evaluate(f"Boolean({ready})"):
                break
        return events

    def resize(self, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.browser.width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def screenshot(self, path: str | os.PathLike, *, full_page: bool = False, max_height: int = 20000) -> Path:
        """PNG of the viewport, or of the whole page (the viewport is stretched to the page's height)."""
        if full_page:
            self.resize(min(int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)")), max_height))
            self.cdp.pump(0.5)
        try:
            data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        finally:
            if full_page:
                self.resize(self.browser.height)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.cdp.call("Target.closeTarget", {"targetId": self.target})


# -- serving ---------------------------------------------------------------------------------

@contextmanager
def serve(directory: str | os.PathLike):
    """Serve ``directory`` on ``http://127.0.0.1:<free port>/`` in a thread; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):  # a browser that cancels a request: not our problem
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    server = Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- the check ---------------------------------------------------------------------------------

_PROBE = r"""(() => {
  const main = document.querySelector('main') || document.body;
  const imgs = [...document.images];
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const subareas = [...document.querySelectorAll('.widget-subarea')];
  const tb = [...document.querySelectorAll('pre, .output')]
    .filter(e => /Traceback \(most recent call last\)|^\s*\w+Error: /m.test(e.innerText || ''));
  return {
    title: document.title,
    images: imgs.map(i => ({src: (i.currentSrc || i.src || '').slice(0, 200), ok: i.complete && i.naturalWidth > 0,
                            main: main.contains(i), widget: !!i.closest('.widget-subarea')})),
    figures: main.querySelectorAll('figure').length,
    tables: main.querySelectorAll('table').length,
    tracebacks: tb.map(e => (e.innerText || '').slice(0, 300)),
    widget_views: views,
    widgets_rendered: subareas.filter(e => e.children.length > 0).length,
    widget_errors: document.querySelectorAll('.jupyter-widgets-error-widget').length,
    math: document.querySelectorAll('div.math, span.math').length,
    mathjax: document.querySelectorAll('mjx-container').length,
    text_length: (main.innerText || '').length,
    launch: [...document.querySelectorAll('.dropdown-launch-buttons a[href]')]
      .map(a => ({text: (a.textContent || '').trim(), href: a.href})),
  };
})()"""

_READY = ("document.readyState === 'complete' && [...document.images].every(i => i.complete) && "
          "(document.querySelectorAll('script[type=\"application/vnd.jupyter.widget-view+json\"]').length <= "
          "[...document.querySelectorAll('.widget-subarea')].filter(e => e.children.length > 0).length) && "
          "(document.querySelectorAll('div.math, span.math').length === 0 || "
          "document.querySelectorAll('mjx-container').length > 0)")


@dataclass
class PageReport:
    """What one page showed and which requests it made."""

    page: str
    probe: dict
    failed: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    js_errors: list[str] = field(default_factory=list)
    launch_problems: list[str] = field(default_factory=list)
    screenshot: str | None = None

    @property
    def problems(self) -> list[str]:
        p = [f"request failed: {f}" for f in self.failed]
        p += [f"request left 127.0.0.1: {u}" for u in self.external]
        p += [f"image did not load: {i['src']}" for i in self.probe["images"] if not i["ok"]]
        p += [f"shows a Python traceback: {t!r}" for t in self.probe["tracebacks"]]
        if self.probe["widgets_rendered"] < self.probe["widget_views"] or self.probe["widget_errors"]:
            p.append(f"widgets: {self.probe['widgets_rendered']} of {self.probe['widget_views']} views rendered, "
                     f"{self.probe['widget_errors']} error widgets")
        if self.probe["math"] and not self.probe["mathjax"]:
            p.append(f"{self.probe['math']} math elements but MathJax typeset none")
        p += [f"JavaScript error: {e}" for e in self.js_errors]
        p += [f"launch buttons: {e}" for e in self.launch_problems]
        return p


def _summarise(page: str, events: list[dict], base: str) -> PageReport:
    host = urlsplit(base).netloc
    rep = PageReport(page=page, probe={})
    urls = {}
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Network.requestWillBeSent":
            url = p["request"]["url"]
            urls[p["requestId"]] = url
            parts = urlsplit(url)
            if parts.scheme not in ("data", "blob", "about") and parts.netloc != host:
                rep.external.append(url)
        elif m == "Network.responseReceived" and p["response"]["status"] >= 400:
            if urlsplit(p["response"]["url"]).path == "/favicon.ico":
                continue  # Chromium's own guess on pages without an icon link (jupyter-book's redirecting index.html)
            rep.failed.append(f"{p['response']['status']} {p['response']['url']}")
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            rep.failed.append(f"{p.get('errorText')} {urls.get(p['requestId'], '?')}")
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            rep.js_errors.append((d.get("exception", {}).get("description") or d.get("text", ""))[:300])
    return rep


def check_book(html_dir: str | os.PathLike, *, pages: list[str] | None = None, screenshots: dict[str, str] | None = None,
               screenshots_dir: str | os.PathLike | None = None, chromium: str | None = None,
               timeout: float = 60.0) -> list[PageReport]:
    """Load every page of ``html_dir`` in headless Chromium and report what each shows.

    Parameters
    ----------
    html_dir : path
        The built HTML (``book/_build/html``).
    pages : list of str, optional
        Pages relative to ``html_dir`` (default: every ``*.html`` outside ``_static``).
    screenshots : dict, optional
        Page → file name for a screenshot (``"full:"`` prefix on the name: full page),
        saved under ``screenshots_dir``.
    chromium : str, optional
        Browser executable (default: :func:`ensure_chromium`).

    Returns
    -------
    list of PageReport
        One per page; :attr:`PageReport.problems` lists what went wrong.
    """
    html_dir = Path(html_dir)
    if pages is None:
        pages = sorted(p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*.html")
                       if "_static" not in p.relative_to(html_dir).parts)
    screenshots = screenshots or {}
    reports = []
    with serve(html_dir) as base, Chromium(chromium) as browser:
        page = browser.open()
        for rel in pages:
            events = page.navigate(base + rel, ready=_READY, timeout=timeout)
            rep = _summarise(rel, events, base)
            rep.probe = page.evaluate(_PROBE)
            rep.launch_problems = launch_problems(rel, rep.probe["launch"], html_dir, REPO_ROOT)
            if rel in screenshots and screenshots_dir is not None:
                name = screenshots[rel]
                full = name.startswith("full:")
                rep.screenshot = str(page.screenshot(Path(screenshots_dir) / name.removeprefix("full:"), full_page=full))
            reports.append(rep)
        page.close()
    return reports

