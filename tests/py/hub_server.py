#!/usr/bin/env python3
"""A stand-in for the Hugging Face Hub and a file mirror, on 127.0.0.1, for the download tests.

    hub_server.py CONFIG.json [REQUEST_LOG]

Prints its port on the first stdout line. Appends "METHOD path range" (range "-" when none) to
REQUEST_LOG for every request, so a test can tell that no request was made.

CONFIG:
  {"repos": {"timm/tiny": {"revisions": {"main": {"commit": "<40 hex>", "files": {"model.safetensors": "text"
                                                                                   or {"path": "/file"}
                                                                                   or {"text": "...", "lfs": false}}}},
                           "gated": false,      # 401 without "Authorization: Bearer <token>"
                           "lfs": true}},       # false: served like a small git file (200, git-sha1 ETag);
                                                # a file's own "lfs" wins (config.json beside LFS weights)
   (a dataset repo's key is "datasets/ORG/NAME", served at /datasets/ORG/NAME/resolve/...)
   "renamed": {"old/tiny": "timm/tiny"},        # relative redirect, as the Hub does for a moved repo
   "token": "hf_...",
   "files_dir": "/dir",                         # /files/<name>
   "truncate": false,                           # the first GET of each file sends half, then closes
   "delay_s": 0,                                # before each body, so that two clients overlap
   "ranges": true}                              # false: Range ignored (200 with the whole file)
  and the write side's keys (hub_write.py): "multipart_threshold", "chunk_size", "read_only_token",
  "faults".

As the Hub does: /{repo}/resolve/{revision}/{file} answers an LFS file with a 302 to a CDN on
another host (here "localhost" instead of "127.0.0.1") with X-Repo-Commit, X-Linked-Etag and
X-Linked-Size; a plain git file with 200 and its git blob sha1 as ETag; errors carry
X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo). A private repository
(created so by a push) answers 401 RepoNotFound without the token.
/api/models/ORG/NAME[/revision/REV] (/api/datasets/...) answers the repository's info as JSON:
{"id", "sha" (REV's commit, main's without), "private", "gated", "siblings": [{"rfilename"}]}.

The write side (create a repository, preupload, the LFS batch API with multipart, commit) is
hub_write.py's; what a push commits is served here.
"""
import hashlib
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from hub_write import LFS_STORE, WriteApi

CONFIG = json.load(open(sys.argv[1]))
LOG = sys.argv[2] if len(sys.argv) > 2 else None
LOCK = threading.Lock()
SERVED = set()  # paths already truncated once


def content(value):
    if isinstance(value, dict):
        if "data" in value:  # committed by a push
            return value["data"]
        return value["text"].encode() if "text" in value else open(value["path"], "rb").read()
    return value.encode()


def find_revision(repo, rev):
    revisions = repo["revisions"]
    if rev in revisions:
        return revisions[rev]
    if rev in repo.get("commits", {}):  # an older commit of a pushed repository
        return {"commit": rev, "files": repo["commits"][rev]}
    return next((r for r in revisions.values() if r["commit"] == rev), None)


def blobs():
    out = dict(LFS_STORE)
    for repo in CONFIG.get("repos", {}).values():
        for rev in list(repo["revisions"].values()):
            for data in rev["files"].values():
                b = content(data)
                out[hashlib.sha256(b).hexdigest()] = b
    return out


class Handler(WriteApi, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    CONFIG = CONFIG
    LOCK = LOCK

    def log_message(self, *args):
        pass

    def log_request_line(self):
        if LOG:
            with LOCK, open(LOG, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Range', '-')}\n")

    def do_HEAD(self):
        self.log_request_line()
        self.route(body=False)

    def do_GET(self):
        self.log_request_line()
        self.route(body=True)

    def reply(self, status, headers=(), data=b"", body=True):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def route(self, body):
        path = urllib.parse.urlsplit(self.path).path
        parts = path.split("/")
        if path.startswith("/cdn/"):
            data = blobs().get(parts[2])
            return self.send_bytes(path, data, body, [("ETag", f'"{parts[2]}"')])
        if path.startswith("/files/"):
            name = urllib.parse.unquote(path[len("/files/"):])
            try:
                data = open(CONFIG["files_dir"] + "/" + name, "rb").read()
            except (KeyError, OSError):
                data = None
            return self.send_bytes(path, data, body, [])
        if parts[1:2] == ["api"] and len(parts) >= 5 and parts[2] in ("models", "datasets") and (
                len(parts) == 5 or parts[5] == "revision" and len(parts) > 6):
            return self.repo_info(parts, body)
        if len(parts) >= 7 and parts[1] == "datasets" and parts[4] == "resolve":  # a dataset repo
            return self.resolve("/".join(parts[1:4]), parts[5], "/".join(parts[6:]), body)
        if len(parts) >= 6 and parts[3] == "resolve":
            return self.resolve(parts[1] + "/" + parts[2], parts[4], "/".join(parts[5:]), body)
        self.reply(404, data=b"not found", body=body)

    def resolve(self, repo_id, rev, filename, body):
        rev = urllib.parse.unquote(rev)
        filename = urllib.parse.unquote(filename)
        if repo_id in CONFIG.get("renamed", {}):
            target = CONFIG["renamed"][repo_id]
            location = f"/{target}/resolve/{urllib.parse.quote(rev, safe='')}/{urllib.parse.quote(filename)}"
            return self.reply(307, [("Location", location)], body=body)
        repo = self.visible_repo(repo_id, body)
        if repo is None:
            return
        if repo.get("gated"):
            auth = self.headers.get("Authorization")
            if auth is None:
                return self.reply(401, [("X-Error-Code", "GatedRepo")], b"Access to this repo is restricted", body)
            if auth != "Bearer " + CONFIG.get("token", ""):
                return self.reply(403, [("X-Error-Code", "GatedRepo")], b"Not in the authorized list", body)
        revision = find_revision(repo, rev)
        if revision is None:
            return self.reply(404, [("X-Error-Code", "RevisionNotFound")], b"Invalid rev id", body)
        commit = revision["commit"]
        if filename not in revision["files"]:
            headers = [("X-Error-Code", "EntryNotFound"), ("X-Repo-Commit", commit)]
            return self.reply(404, headers, b"Entry not found", body)
        value = revision["files"][filename]
        data = content(value)
        lfs = value.get("lfs", repo.get("lfs", True)) if isinstance(value, dict) else repo.get("lfs", True)
        if not lfs:
            sha1 = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            return self.reply(200, [("X-Repo-Commit", commit), ("ETag", f'"{sha1}"')], data, body)
        sha = hashlib.sha256(data).hexdigest()
        port = self.server.server_address[1]
        headers = [("Location", f"http://localhost:{port}/cdn/{sha}"), ("X-Repo-Commit", commit),
                   ("X-Linked-Etag", f'"{sha}"'), ("X-Linked-Size", str(len(data))), ("ETag", '"git-pointer"')]
        self.reply(302, headers, b"Found. Redirecting", body)

    def visible_repo(self, repo_id, body):
        """The repository, or None once 404 (none such) or 401 (private, without the token) is sent."""
        repo = CONFIG.get("repos", {}).get(repo_id)
        if repo is None:
            self.reply(404, [("X-Error-Code", "RepoNotFound")], b"Repository not found", body)
            return None
        if repo.get("private") and self.headers.get("Authorization") != "Bearer " + CONFIG.get("token", ""):
            self.reply(401, [("X-Error-Code", "RepoNotFound")], b"Repository not found", body)
            return None
        return repo

    def repo_info(self, parts, body):
        """/api/models/ORG/NAME[/revision/REV]: what HfApi.repo_info reads (create_commit reads the head's
        sha when nothing changed)."""
        repo_id = "/".join(parts[3:5]) if parts[2] == "models" else "datasets/" + "/".join(parts[3:5])
        rev = urllib.parse.unquote("/".join(parts[6:])) if len(parts) > 6 else "main"
        repo = self.visible_repo(repo_id, body)
        if repo is None:
            return
        revision = find_revision(repo, rev)
        if revision is None:
            return self.reply(404, [("X-Error-Code", "RevisionNotFound")], b"Invalid rev id", body)
        info = {"id": "/".join(parts[3:5]), "sha": revision["commit"], "private": bool(repo.get("private")),
                "gated": "auto" if repo.get("gated") else False,
                "siblings": [{"rfilename": name} for name in sorted(revision["files"])]}
        self.reply(200, [("Content-Type", "application/json")], json.dumps(info).encode(), body)

    def send_bytes(self, path, data, body, headers):
        if data is None:
            return self.reply(404, data=b"not found", body=body)
        start, status = 0, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and CONFIG.get("ranges", True):
            start = int(rng[len("bytes="):].split("-")[0])
            if start >= len(data):
                return self.reply(416, [("Content-Range", f"bytes */{len(data)}")], body=body)
            status = 206
            headers = headers + [("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")]
        part = data[start:]
        self.send_response(status)
        for k, v in headers + [("Accept-Ranges", "bytes"), ("Content-Length", str(len(part)))]:
            self.send_header(k, v)
        self.end_headers()
        if not body:
            return
        time.sleep(CONFIG.get("delay_s", 0))
        with LOCK:
            truncate = CONFIG.get("truncate") and path not in SERVED
            SERVED.add(path)
        if truncate:
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(part)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
