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
import ctypes
import functools
import html
import html.parser
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

try:
    import websocket  # python3-websocket
except ImportError:
    print("browser_check: python3-websocket is missing (scripts/setup.sh --docs installs it)", file=sys.stderr)
    sys.exit(2)

WIDTH, HEIGHT = 1280, 900
ABSENT_WORD = "qzxvkwjhpfrt"  # in no page: the search must find nothing for it


class CheckError(Exception):
    """The check could not run (not a finding about the site)."""


def log(msg):
    print(msg, flush=True)


# --- the site's pages, from its own navigation ----------------------------------------------------

class NavParser(html.parser.HTMLParser):
    """The links of mkdocs-material's primary navigation (Material 8 and 9), grouped by top-level
    item: sections[i] is the list of page hrefs under the i-th top-level entry, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.nav_depth = 0  # nested <nav> depth inside the primary nav; 0 = outside it
        self.li_depth = 0
        self.sections = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "nav":
            if self.nav_depth:
                self.nav_depth += 1
            elif "md-nav--primary" in classes:
                self.nav_depth = 1
            return
        if not self.nav_depth:
            return
        if tag == "li":
            self.li_depth += 1
            if self.li_depth == 1:
                self.sections.append([])
        elif tag == "a" and self.li_depth and "md-nav__link" in classes:
            href = a.get("href")
            if href and not href.startswith("#"):
                self.sections[-1].append(href.split("#")[0] or ".")

    def handle_endtag(self, tag):
        if not self.nav_depth:
            return
        if tag == "nav":
            self.nav_depth -= 1
        elif tag == "li":
            self.li_depth = max(0, self.li_depth - 1)


def site_pages(site, base, check_all):
    """Page URLs to check: the start page first, then one (--all: every) page per nav section."""
    start = base + "/"
    with open(os.path.join(site, "index.html"), encoding="utf-8") as f:
        parser = NavParser()
        parser.feed(f.read())
    sections = [[urllib.parse.urljoin(start, h) for h in s] for s in parser.sections]
    sections = [[u for u in s if urllib.parse.urlsplit(u).netloc == urllib.parse.urlsplit(start).netloc]
                for s in sections]
    sections = [s for s in sections if s]
    if not sections:  # no Material navigation: the search index lists the pages
        index = os.path.join(site, "search", "search_index.json")
        if os.path.exists(index):
            with open(index, encoding="utf-8") as f:
                locations = [d["location"] for d in json.load(f)["docs"] if "#" not in d["location"]]
            groups = {}
            for loc in locations:
                groups.setdefault(loc.split("/")[0], []).append(urllib.parse.urljoin(start, loc))
            sections = list(groups.values())
    pages, files = [start], {page_file(site, start)}
    for s in sections:
        for u in s if check_all else s[:1]:
            f = page_file(site, u) or u  # index.html and its folder are one page
            if f not in files:
                pages.append(u)
                files.add(f)
    return pages


def page_file(site, url):
    """The file of the built site that URL serves (None when outside the site)."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path).lstrip("/")
    full = os.path.normpath(os.path.join(site, path))
    if os.path.isdir(full):
        full = os.path.join(full, "index.html")
    return full if os.path.isfile(full) else None


def page_text(site, url):
    f = page_file(site, url)
    if not f:
        return ""
    with open(f, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


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


# --- Chromium -------------------------------------------------------------------------------------

def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    raise CheckError("no chromium on PATH (scripts/setup.sh --docs installs it)")


def _die_with_parent():
    """In the child before exec: SIGKILL when this script dies, even by SIGKILL."""
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Browser:
    def __init__(self, deadline):
        self.deadline = deadline
        self.proc = None
        self.profile = tempfile.mkdtemp(prefix="browser-check-")
        self.logfile = os.path.join(self.profile, "chromium.log")

    def start(self):
        exe = find_chromium()
        for headless in ("--headless=new", "--headless"):
            port = self._launch(exe, headless)
            if port:
                return port
        raise CheckError("chromium did not start; its output:\n" + self.log_tail())

    def _launch(self, exe, headless):
        args = [exe, headless, "--user-data-dir=" + self.profile, "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                # Nothing leaves the machine: no host resolves but 127.0.0.1, and what is not
                # loopback (which Chromium never proxies) goes to a proxy that is not there.
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                "--proxy-server=http://127.0.0.1:9",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps",
                "--disable-extensions", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio",
                "--hide-scrollbars", "--password-store=basic", "--use-mock-keychain",
                "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
                f"--window-size={WIDTH},{HEIGHT}", "about:blank"]
        if os.geteuid() == 0:
            args.insert(2, "--no-sandbox")
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        env = dict(os.environ, TMPDIR=os.path.join(self.profile, "tmp"))  # its own temp files go with the profile
        os.makedirs(env["TMPDIR"], exist_ok=True)
        with open(self.logfile, "ab") as out:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                         preexec_fn=_die_with_parent)
        limit = min(self.deadline, time.monotonic() + 30)
        while time.monotonic() < limit:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    lines = f.read().split("\n")
                if len(lines) >= 2 and lines[0].strip().isdigit() and lines[1].strip():
                    self.ws_path = lines[1].strip()
                    return int(lines[0])
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        return None

    def log_tail(self):
        try:
            with open(self.logfile, errors="replace") as f:
                return "".join(f.readlines()[-15:])
        except OSError:
            return "(no output)"

    def stop(self, graceful=None):
        if self.proc and self.proc.poll() is None and graceful:
            try:  # Browser.close over the protocol, then signals
                graceful()
                self.proc.wait(timeout=3)
            except Exception:
                pass
        if self.proc and self.proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=3)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.proc:
            try:  # the zygote and renderers share the group; none may outlive the check
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
            # Until the group is gone (its zombies reaped by init): no process outlives the check.
            limit = time.monotonic() + 5
            while time.monotonic() < limit:
                try:
                    os.killpg(self.proc.pid, 0)
                except (ProcessLookupError, PermissionError):
                    break
                time.sleep(0.05)
        self.proc = None

    def cleanup(self, graceful=None):
        self.stop(graceful)
        shutil.rmtree(self.profile, ignore_errors=True)


# --- the DevTools protocol ------------------------------------------------------------------------

class Cdp:
    """A flat-session CDP client on the browser's websocket; events go to `on_event`."""

    def __init__(self, url, deadline, on_event):
        self.deadline = deadline
        self.ws = websocket.create_connection(url, timeout=10, suppress_origin=True)
        self.next_id = 0
        self.on_event = on_event
        self.replies = {}

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        return self.next_id

    def call(self, method, params=None, session=None, timeout=20):
        i = self.send(method, params, session)
        limit = min(self.deadline, time.monotonic() + timeout)
        while i not in self.replies:
            if not self.pump(limit):
                raise CheckError(f"no answer to {method} in time")
        reply = self.replies.pop(i)
        if "error" in reply:
            raise CheckError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def pump(self, limit):
        """Reads one message (False when `limit` passed first)."""
        left = limit - time.monotonic()
        if left <= 0:
            return False
        self.ws.settimeout(min(left, 0.25))
        try:
            raw = self.ws.recv()
        except websocket.WebSocketTimeoutException:
            return time.monotonic() < limit
        msg = json.loads(raw)
        if "id" in msg:
            self.replies[msg["id"]] = msg
        else:
            self.on_event(msg)
        return True

    def wait(self, cond, timeout):
        """Reads events until cond() (True) or the timeout (False)."""
        limit = min(self.deadline, time.monotonic() + timeout)
        while not cond():
            if not self.pump(limit):
                return cond()
        return True

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass


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
