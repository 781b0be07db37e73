"""Headless Chromium for browser_check.py: started with a temporary profile in a process group of
its own (stopped with the parent, on every path), and driven over the Chrome DevTools Protocol on
its websocket (python3-websocket).
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import tempfile
import sys
import time

try:
    import websocket  # python3-websocket
except ImportError:
    print("browser_check: python3-websocket is missing (scripts/setup.sh --docs installs it)", file=sys.stderr)
    sys.exit(2)

WIDTH, HEIGHT = 1280, 900


class CheckError(Exception):
    """The check could not run (not a finding about the site)."""


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
