#!/usr/bin/python3
"""Opens a built documentation site in headless Chromium and checks it as a reader meets it.

    browser_check.py SITE_DIR SCREENSHOT.png [--all] [--search WORD] [--timeout SECONDS]

SITE_DIR (the output of `mkdocs build`) is served by Python's http.server on 127.0.0.1 (a free
port, in a thread); Chromium runs headless with a temporary profile and is driven over the Chrome
DevTools Protocol (python3-websocket). The pages checked are the start page and the first page of
each section of the site's navigation, as the built start page lists it (--all: every page it
lists); on each, after the load event and a quiet network, the check fails on
  - a console error or an uncaught exception (Runtime.exceptionThrown, Log.entryAdded level
    error, Runtime.consoleAPICalled type error or assert), the page's and its workers';
  - a request for anything not on 127.0.0.1 (data:, blob: and about: are fine): nothing may leave
    the machine. Such requests are also blocked (the resolver knows no host but 127.0.0.1 and a
    dead proxy takes everything else), so a failure is what a reader offline would meet;
  - an HTTP error (status 400 or above) for the page or anything it loads.
Then the search, on the start page: WORD (default label_regex) is typed into the search box and
the result list must link to a page whose text contains WORD; a word that no page contains must
then leave the list empty (so the list is really the search's). A PNG screenshot of the start
page (1280x900) is saved to SCREENSHOT.png.

One line per page, then a summary; exit 0 only when everything passed (1: a check failed, 2: the
check could not run, e.g. Chromium did not start). Chromium (its whole process group) and the
server are stopped on every path, a timeout or SIGTERM included.
Needs only the standard library and python3-websocket (Debian; scripts/setup.sh --docs).
"""

import argparse
import base64
import functools
import http.server
import os
import signal
import sys
import threading
import time
import urllib.parse

from chromium import HEIGHT, WIDTH, Browser, Cdp, CheckError  # tests/docs/chromium.py; exits 2 without python3-websocket
from site_pages import page_text, site_pages  # tests/docs/site_pages.py
import websocket  # noqa: E402 (python3-websocket, checked by chromium.py)

ABSENT_WORD = "qzxvkwjhpfrt"  # in no page: the search must find nothing for it


def log(msg):
    print(msg, flush=True)


# --- the server -----------------------------------------------------------------------------------

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    errors = None  # list shared with the check: (status, path)

    def log_message(self, *args):
        pass

    def log_request(self, code="-", size="-"):
        try:
            if int(code) >= 400 and self.errors is not None:
                self.errors.append((int(code), self.path))
        except (TypeError, ValueError):
            pass


def start_server(site, errors):
    handler = functools.partial(type("H", (QuietHandler,), {"errors": errors}), directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    return server


# --- the check ------------------------------------------------------------------------------------

def allowed_url(url):
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("data", "blob", "about"):
        return True
    parts = urllib.parse.urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname == "127.0.0.1"


class Checker:
    def __init__(self, site, base, cdp_url, deadline):
        self.site, self.base = site, base
        self.page = None  # the page being checked: problems are filed under it
        self.problems = []  # (page, message)
        self.loaded = False
        self.inflight = set()
        self.last_activity = time.monotonic()
        self.requests = 0
        self.doc_status = None
        self.sessions = set()
        self.cdp = Cdp(cdp_url, deadline, self.on_event)

    def problem(self, msg):
        self.problems.append((self.page or "(browser)", msg))

    def on_event(self, msg):
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Target.attachedToTarget":  # a worker of the page: watched like the page
            s = p["sessionId"]
            self.sessions.add(s)
            for method in ("Runtime.enable", "Log.enable", "Network.enable"):
                self.cdp.send(method, session=s)
            self.cdp.send("Runtime.runIfWaitingForDebugger", session=s)
        elif m == "Page.loadEventFired":
            self.loaded = True
        elif m == "Network.requestWillBeSent":
            url = p["request"]["url"]
            self.requests += 1
            self.inflight.add(p["requestId"])  # a worker's script finishes in its session
            self.last_activity = time.monotonic()
            if not allowed_url(url):
                self.problem(f"request leaving the machine: {url}")
        elif m == "Network.responseReceived":
            r = p["response"]
            if p.get("type") == "Document" and self.page and r["url"].split("#")[0] == self.page.split("#")[0]:
                self.doc_status = r["status"]
            if r["status"] >= 400:
                self.problem(f"HTTP {r['status']}: {r['url']}")
        elif m in ("Network.loadingFinished", "Network.loadingFailed"):
            self.inflight.discard(p["requestId"])
            self.last_activity = time.monotonic()
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            text = (d.get("exception") or {}).get("description") or d.get("text", "")
            where = d.get("url") or (d.get("stackTrace", {}).get("callFrames") or [{}])[0].get("url", "")
            self.problem(f"uncaught exception: {text.splitlines()[0] if text else '?'}"
                         + (f" ({where}:{d.get('lineNumber', 0) + 1})" if where else ""))
        elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            frames = (p.get("stackTrace") or {}).get("callFrames") or [{}]
            where = frames[0].get("url", "")
            self.problem(f"console.{p['type']}: {args}"
                         + (f" ({where}:{frames[0].get('lineNumber', 0) + 1})" if where else ""))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            e = p["entry"]
            self.problem(f"console error ({e.get('source')}): {e.get('text')}"
                         + (f" ({e['url']})" if e.get("url") else ""))

    def open(self):
        c = self.cdp
        target = c.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = c.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Network.enable", "Page.enable"):
            c.call(method, session=self.session)
        c.call("Network.setCacheDisabled", {"cacheDisabled": True}, session=self.session)
        c.call("Emulation.setDeviceMetricsOverride",
               {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}, session=self.session)
        c.call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
               session=self.session)

    def evaluate(self, expression):
        r = self.cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                          session=self.session)
        if "exceptionDetails" in r:
            raise CheckError(f"evaluating in the page failed: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def settle(self, quiet=0.5, timeout=8):
        """Until no request has been in flight for `quiet` seconds."""
        self.cdp.wait(lambda: not self.inflight and time.monotonic() - self.last_activity >= quiet, timeout)

    def visit(self, url):
        self.page, self.loaded, self.doc_status, self.requests = url, False, None, 0
        self.inflight.clear()
        before = len(self.problems)
        t0 = time.monotonic()
        r = self.cdp.call("Page.navigate", {"url": url}, session=self.session)
        if r.get("errorText"):
            self.problem(f"navigation failed: {r['errorText']}")
        elif not self.cdp.wait(lambda: self.loaded, 20):
            self.problem("no load event within 20 s")
        self.settle()
        if self.doc_status is None and not r.get("errorText"):
            self.problem("no HTTP response seen for the page")
        mine = self.problems[before:]
        rel = url[len(self.base):] or "/"
        if mine:
            for _, msg in mine:
                log(f"FAIL {rel}: {msg}")
        else:
            log(f"ok   {rel} (HTTP {self.doc_status}, {self.requests} requests, {time.monotonic() - t0:.1f} s)")
        return not mine

    def screenshot(self, path):
        data = self.cdp.call("Page.captureScreenshot", {"format": "png"}, session=self.session)["data"]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    SEARCH_INPUT = "document.querySelector('[data-md-component=search-query], .md-search__input, input[type=search]')"
    RESULTS_JS = """(() => {
      const list = document.querySelector('.md-search-result__list, [data-md-component=search-result] ol, [data-md-component=search-result] ul');
      const meta = document.querySelector('.md-search-result__meta');
      const links = list ? Array.from(list.querySelectorAll('a[href]')).map(a => a.href) : [];
      return {found: !!list, links: links, meta: meta ? meta.textContent.trim() : ''};
    })()"""

    def search(self, word, done, timeout=15):
        """Types `word` into the search box and reads the results until done(links, meta) or the
        timeout (the worker answers a moment later, and the list may still show the previous
        query's results); (links of the result list, its meta line, whether there is a list)."""
        has_input = self.evaluate(f"!!{self.SEARCH_INPUT}")
        if not has_input:
            raise SearchMissing("no search box on the start page "
                                "([data-md-component=search-query] / .md-search__input)")
        self.evaluate(f"(() => {{ const i = {self.SEARCH_INPUT}; i.focus(); i.value = ''; "
                      "i.dispatchEvent(new Event('input', {bubbles: true})); })()")
        self.cdp.call("Input.insertText", {"text": word}, session=self.session)
        fire = (f"(() => {{ const i = {self.SEARCH_INPUT}; "
                "i.dispatchEvent(new Event('input', {bubbles: true})); "
                "i.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true, key: 'Shift'})); "
                "return i.value; })()")
        value = self.evaluate(fire)
        if value != word:
            raise SearchMissing(f"typing into the search box left {value!r}, not {word!r}")
        limit = time.monotonic() + timeout
        state = {}
        refire = time.monotonic() + 2
        while time.monotonic() < limit:
            self.cdp.wait(lambda: False, 0.25)
            state = self.evaluate(self.RESULTS_JS) or {}
            # The meta line names the query's outcome ("1 matching document", "No matching
            # documents"); while the index loads it says "Initializing search" or "Type to start".
            if done(state.get("links", []), state.get("meta", "").lower()):
                break
            if time.monotonic() > refire:  # the index was not ready for the first event
                self.evaluate(fire)
                refire = time.monotonic() + 2
        return state.get("links", []), state.get("meta", ""), state.get("found", False)


class SearchMissing(Exception):
    pass


def run_check(args):
    site = os.path.abspath(args.site)
    if not os.path.isfile(os.path.join(site, "index.html")):
        raise CheckError(f"{site}: no index.html (not a built site)")
    deadline = time.monotonic() + args.timeout
    server_errors = []
    server = start_server(site, server_errors)
    browser = Browser(deadline)
    checker = None
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        pages = site_pages(site, base, args.all)
        port = browser.start()
        checker = Checker(site, base, f"ws://127.0.0.1:{port}{browser.ws_path}", deadline)
        checker.open()
        ok_pages = sum(checker.visit(url) for url in pages[1:] + pages[:1])  # the start page last: screenshot, search
        checker.screenshot(args.screenshot)
        log(f"screenshot of the start page ({WIDTH}x{HEIGHT}): {args.screenshot}")

        checker.page = base + "/ (search)"
        search_ok = False
        try:
            def mentions(url):
                return args.search.lower() in page_text(site, url).lower()

            # Done when a result names a page with the word, or the meta line says no match.
            links, meta, found = checker.search(
                args.search, lambda links, meta: any(map(mentions, links)) or ("no " in meta and "match" in meta))
            hits = [u for u in links if mentions(u)]
            if not found:
                log(f"FAIL search: no result list (.md-search-result__list) after typing {args.search!r}")
            elif not hits:
                log(f"FAIL search {args.search!r}: no result links to a page containing it "
                    f"(meta: {meta!r}; results: {links or 'none'})")
            else:
                none_links, none_meta, _ = checker.search(
                    ABSENT_WORD, lambda links, meta: not links and "no " in meta and "match" in meta, timeout=8)
                if none_links:
                    log(f"FAIL search {ABSENT_WORD!r} (in no page) still lists results: {none_links} "
                        f"(meta: {none_meta!r}): the list is not the search's")
                else:
                    search_ok = True
                    rels = sorted({u[len(base):].split("#")[0] or "/" for u in hits})
                    log(f"ok   search {args.search!r}: {len(links)} results ({meta}), pages {', '.join(rels)}; "
                        f"{ABSENT_WORD!r}: none")
        except SearchMissing as e:
            log(f"FAIL search: {e}")
        # Problems the search itself raised (errors, requests), and what the server refused.
        late = [m for p, m in checker.problems if p == checker.page]
        for m in late:
            log(f"FAIL search page: {m}")
        seen = {m for _, m in checker.problems}
        for status, path in server_errors:
            if not any(path in m for m in seen):
                log(f"FAIL server answered HTTP {status}: {path}")
        failed = len(pages) - ok_pages
        ok = failed == 0 and search_ok and not late and not [
            1 for s, pth in server_errors if not any(pth in m for m in seen)]
        log(f"browser_check: {len(pages)} pages, {failed} failed; search {'ok' if search_ok else 'FAILED'}; "
            f"{len(checker.problems)} problems; {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1
    finally:
        graceful = None
        if checker:
            graceful = lambda: checker.cdp.send("Browser.close")
        try:
            browser.cleanup(graceful)
        finally:
            if checker:
                checker.cdp.close()
            server.shutdown()
            server.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("site", help="the built site (mkdocs build -d SITE)")
    ap.add_argument("screenshot", help="where to save the start page's PNG screenshot")
    ap.add_argument("--all", action="store_true", help="check every page of the navigation")
    ap.add_argument("--search", default="label_regex", help="the word to search for (default label_regex)")
    ap.add_argument("--timeout", type=float, default=90, help="seconds for the whole check (default 90)")
    args = ap.parse_args()

    def on_signal(sig, _frame):  # timeout(1), ctest: stop Chromium and the server on the way out
        print(f"browser_check: stopped by signal {sig} (timed out?); Chromium and the server are stopped", flush=True)
        raise SystemExit(128 + sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        return run_check(args)
    except CheckError as e:
        print(f"browser_check: cannot check: {e}", flush=True)
        return 2
    except (OSError, websocket.WebSocketException) as e:
        print(f"browser_check: cannot check: {type(e).__name__}: {e}", flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
