"""The write side of the Hub stand-in (hub_server.py): what huggingface_hub's HfApi.create_repo,
create_branch, upload_folder / create_commit (huggingface_hub/_commit_api.py, lfs.py) send, answered
as the Hub answers it, the repositories kept in memory so that the read side serves what a push
committed.

    POST /api/repos/create                         {"name", "organization", "type", "visibility"|"private"}
                                                   -> 200 {"url"}; 409 {"error", "url"} when it exists
    POST /api/models/ORG/NAME/branch/BRANCH        -> 200; 409 when it exists (from main's head)
    POST /api/validate-yaml                        {"content"} -> {"errors": [], "warnings": []}
    POST /api/models/ORG/NAME/preupload/REV        {"files": [{"path", "sample", "size"}]}
                                                   -> {"files": [{"path", "uploadMode", "shouldIgnore", "oid"}]}
         uploadMode "lfs" for a size over 10 MiB, a NUL byte in the 512-byte sample, or a name the
         repository's .gitattributes sends to LFS; "oid" is the file's at REV (sha256 for LFS, git
         blob sha1 otherwise), so that an unchanged file is left out of the commit
    POST /ORG/NAME.git/info/lfs/objects/batch      git-lfs batch API: an object the store has gets
         no "actions"; one above config "multipart_threshold" bytes (default 1 MiB) gets the
         multipart transfer (header chunk_size = config "chunk_size", "00001".. part URLs), the
         others basic; both with a verify action. Upload URLs are on "localhost" (the CDN's host).
    PUT  /lfs-upload/OID                           basic transfer; the sha256 must match
    PUT  /lfs-part/OID/N                           multipart part N; ETag = md5 of the part
    POST /lfs-complete/OID                         {"oid", "parts": [{"partNumber", "etag"}]}
    POST /ORG/NAME.git/info/lfs/objects/verify     {"oid", "size"} -> 200, or 404 when not stored
    POST /api/models/ORG/NAME/commit/REV           NDJSON: header {summary, description,
         parentCommit?}, file {path, content (base64), encoding}, lfsFile {path, algo, oid, size}
         -> {"commitUrl", "commitOid", "success"}; 412 for a stale parentCommit; 400 for an
         lfsFile the store lacks

Writes need "Authorization: Bearer <config token>" (401 without, 403 with another token or with
config "read_only_token"). Errors carry X-Error-Message and a JSON {"error": message}, as the Hub's.
config "faults": [{"method": "PUT", "path": "/lfs-part/", "status": 503, "count": 1,
"headers": {"Retry-After": "0"}, "message": "..."}, or {..., "cut": true}, or {..., "delay_s": 2}]
answers the first `count` requests whose path starts with `path` with that status, or reads half
the body and closes, or waits that long before answering as usual.
"""
import base64
import hashlib
import json
import time
import urllib.parse

REASONS = {413: "Content Too Large", 429: "Too Many Requests", 412: "Precondition Failed", 404: "Not Found",
           403: "Forbidden", 401: "Unauthorized", 500: "Internal Server Error", 503: "Service Unavailable"}
LFS_STORE = {}  # sha256 hex -> bytes, the uploads that completed
PENDING_PARTS = {}  # sha256 hex -> {part number: bytes}
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".ckpt", ".h5", ".msgpack", ".pkl", ".npy",
                ".npz", ".zip", ".tar", ".gz", ".tflite", ".ot", ".model")
GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in LFS_SUFFIXES)


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_oid(value, data):
    return hashlib.sha256(data).hexdigest() if value.get("lfs", True) else git_sha1(data)


class WriteApi:
    """Mixed into hub_server.Handler: do_POST and do_PUT."""

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def error(self, status, message, code=None, **extra):
        headers = [("X-Error-Message", message), ("Content-Type", "application/json")]
        if code:
            headers.append(("X-Error-Code", code))
        self.reply(status, headers, json.dumps({"error": message, **extra}).encode())

    def json_reply(self, value, status=200):
        self.reply(status, [("Content-Type", "application/json")], json.dumps(value).encode())

    def fault(self):
        """True when a configured fault answered this request."""
        path = urllib.parse.urlsplit(self.path).path
        for f in self.CONFIG.get("faults", []):
            if f.get("method", self.command) != self.command or not path.startswith(f["path"]):
                continue
            with self.LOCK:
                if f.get("count", 1) <= 0:
                    continue
                f["count"] = f.get("count", 1) - 1
            if "status" not in f and not f.get("cut"):  # a delay only: then answered as usual
                time.sleep(f.get("delay_s", 0))
                return False
            if f.get("cut"):
                self.rfile.read(int(self.headers.get("Content-Length", 0)) // 2)
                self.close_connection = True
                return True
            self.body()
            headers = [("X-Error-Message", f.get("message", "fault")), ("Content-Type", "application/json")]
            headers += list(f.get("headers", {}).items())
            data = json.dumps({"error": f.get("message", "fault")}).encode()
            # The reason phrase pinned: Python's changed with RFC 9110 (413 "Request Entity Too
            # Large" in 3.11, "Content Too Large" in 3.13).
            self.send_response(f["status"], REASONS.get(f["status"]))
            for k, v in headers + [("Content-Length", str(len(data)))]:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            return True
        return False

    def authorized(self):
        token = self.CONFIG.get("token", "")
        auth = self.headers.get("Authorization")
        if auth is None:
            self.body()
            self.error(401, "Invalid username or password.")
            return False
        if auth != "Bearer " + token or self.CONFIG.get("read_only_token"):
            self.body()
            self.error(403, "You don't have the rights to write to this repository: the token is read-only or another user's")
            return False
        return True

    def do_PUT(self):
        self.log_request_line()
        if self.fault():
            return
        parts = urllib.parse.urlsplit(self.path).path.split("/")
        data = self.body()
        if parts[1] == "lfs-upload":
            if hashlib.sha256(data).hexdigest() != parts[2]:
                return self.error(400, "the content's sha256 is not the object id")
            with self.LOCK:
                LFS_STORE[parts[2]] = data
            return self.reply(200, [("ETag", '"' + hashlib.md5(data).hexdigest() + '"')])
        if parts[1] == "lfs-part":
            with self.LOCK:
                PENDING_PARTS.setdefault(parts[2], {})[int(parts[3])] = data
            return self.reply(200, [("ETag", '"' + hashlib.md5(data).hexdigest() + '"')])
        self.error(404, "not found")

    def do_POST(self):
        self.log_request_line()
        if self.fault():
            return
        path = urllib.parse.urlsplit(self.path).path
        parts = path.split("/")
        if path.startswith("/lfs-complete/"):
            return self.complete_multipart(parts[2])
        if path == "/api/validate-yaml":
            return self.validate_yaml()
        if not self.authorized():
            return
        if path == "/api/repos/create":
            return self.create_repo()
        if len(parts) >= 7 and parts[1] == "api" and parts[2] == "models":
            repo_id, action, rev = parts[3] + "/" + parts[4], parts[5], urllib.parse.unquote("/".join(parts[6:]))
            return {"preupload": self.preupload, "commit": self.commit, "branch": self.create_branch}.get(
                action, lambda *_: self.error(404, "not found"))(repo_id, rev)
        if len(parts) >= 7 and parts[2].endswith(".git") and parts[3:6] == ["info", "lfs", "objects"]:
            repo_id = parts[1] + "/" + parts[2][: -len(".git")]
            return self.lfs_batch(repo_id) if parts[6] == "batch" else self.lfs_verify(repo_id)
        self.body()
        self.error(404, "not found")

    def repo_or_404(self, repo_id):
        repo = self.CONFIG.setdefault("repos", {}).get(repo_id)
        if repo is None:
            self.error(404, "Repository not found", "RepoNotFound")
        return repo

    def create_repo(self):
        request = json.loads(self.body())
        repo_id = f"{request['organization']}/{request['name']}" if request.get("organization") else request["name"]
        with self.LOCK:
            repos = self.CONFIG.setdefault("repos", {})
            if repo_id in repos:  # with the url, which create_repo(exist_ok=True) returns
                return self.error(409, "You already created this model repo", url=f"{self.endpoint()}/{repo_id}")
            files = {".gitattributes": {"text": GITATTRIBUTES, "lfs": False}}
            private = request.get("visibility") == "private" or bool(request.get("private"))
            repos[repo_id] = {"revisions": {"main": {"commit": self.new_commit(repo_id, "", files), "files": files}},
                              "private": private, "lfs": True}
        self.json_reply({"url": f"{self.endpoint()}/{repo_id}", "name": repo_id})

    def create_branch(self, repo_id, branch):
        self.body()
        with self.LOCK:
            repo = self.repo_or_404(repo_id)
            if repo is None:
                return
            if branch in repo["revisions"]:
                return self.error(409, "Reference already exists")
            main = repo["revisions"]["main"]
            repo["revisions"][branch] = {"commit": main["commit"], "files": dict(main["files"])}
        self.json_reply({})

    def revision_or_404(self, repo_id, rev):
        repo = self.repo_or_404(repo_id)
        if repo is None:
            return None
        revision = repo["revisions"].get(rev)
        if revision is None:
            self.error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return revision

    def preupload(self, repo_id, rev):
        request = json.loads(self.body())
        revision = self.revision_or_404(repo_id, rev)
        if revision is None:
            return
        out = []
        for f in request["files"]:
            sample = base64.b64decode(f["sample"])
            lfs = f["size"] > 10 * 1024 * 1024 or b"\0" in sample or f["path"].endswith(LFS_SUFFIXES)
            have = revision["files"].get(f["path"])
            oid = None
            if isinstance(have, dict) and "data" in have:
                oid = file_oid(have, have["data"])
            out.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": oid})
        self.json_reply({"files": out, "commitOid": revision["commit"]})

    def validate_yaml(self):
        import yaml
        content = json.loads(self.body())["content"]
        errors = []
        if content.startswith("---\n"):
            try:
                yaml.safe_load(content[4:content.index("\n---", 3)])
            except (yaml.YAMLError, ValueError) as e:
                errors.append({"message": str(e)})
        self.json_reply({"errors": errors, "warnings": []}, 200 if not errors else 400)

    def endpoint(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def cdn(self):
        return f"http://localhost:{self.server.server_address[1]}"

    def lfs_batch(self, repo_id):
        request = json.loads(self.body())
        if self.repo_or_404(repo_id) is None:
            return
        threshold = self.CONFIG.get("multipart_threshold", 1024 * 1024)
        chunk = self.CONFIG.get("chunk_size", 512 * 1024)
        objects, multipart = [], False
        for o in request["objects"]:
            oid, size = o["oid"], o["size"]
            if oid in LFS_STORE:
                objects.append({"oid": oid, "size": size})
                continue
            verify = {"href": f"{self.endpoint()}/{repo_id}.git/info/lfs/objects/verify", "header": {}}
            if size > threshold and "multipart" in request.get("transfers", []):
                multipart = True
                n = (size + chunk - 1) // chunk
                header = {"chunk_size": str(chunk)}
                header.update({f"{i:05d}": f"{self.cdn()}/lfs-part/{oid}/{i}" for i in range(1, n + 1)})
                upload = {"href": f"{self.cdn()}/lfs-complete/{oid}", "header": header}
            else:
                upload = {"href": f"{self.cdn()}/lfs-upload/{oid}"}
            objects.append({"oid": oid, "size": size, "authenticated": True,
                            "actions": {"upload": upload, "verify": verify}})
        self.json_reply({"transfer": "multipart" if multipart else "basic", "objects": objects})

    def complete_multipart(self, oid):
        request = json.loads(self.body())
        with self.LOCK:
            parts = PENDING_PARTS.get(oid, {})
            numbers = [p["partNumber"] for p in request["parts"]]
            if request["oid"] != oid or numbers != list(range(1, len(parts) + 1)):
                return self.error(400, "the parts listed are not the parts uploaded")
            for p in request["parts"]:
                if p["etag"].strip('"') != hashlib.md5(parts[p["partNumber"]]).hexdigest():
                    return self.error(400, f"part {p['partNumber']}: etag mismatch")
            data = b"".join(parts[n] for n in numbers)
            if hashlib.sha256(data).hexdigest() != oid:
                return self.error(400, "the parts' sha256 is not the object id")
            LFS_STORE[oid] = data
            del PENDING_PARTS[oid]
        self.json_reply({})

    def lfs_verify(self, repo_id):
        request = json.loads(self.body())
        data = LFS_STORE.get(request["oid"])
        if data is None or len(data) != request["size"]:
            return self.error(404, f"object {request['oid']} is not stored")
        self.json_reply({})

    def commit(self, repo_id, rev):
        lines = [json.loads(line) for line in self.body().splitlines() if line.strip()]
        if self.headers.get("Content-Type") != "application/x-ndjson" or not lines or lines[0]["key"] != "header":
            return self.error(400, "expected application/x-ndjson starting with a header line")
        with self.LOCK:
            revision = self.revision_or_404(repo_id, rev)
            if revision is None:
                return
            header = lines[0]["value"]
            parent = header.get("parentCommit")
            if parent is not None and parent != revision["commit"]:
                return self.error(412, "A commit has happened since. Please refresh and try again.")
            files = dict(revision["files"])
            for item in lines[1:]:
                v = item["value"]
                if item["key"] == "file":
                    files[v["path"]] = {"data": base64.b64decode(v["content"]), "lfs": False}
                elif item["key"] == "lfsFile":
                    if v["oid"] not in LFS_STORE:
                        return self.error(400, f"Your push was rejected because an LFS pointer pointed to a file that "
                                               f"does not exist: {v['path']}")
                    files[v["path"]] = {"data": LFS_STORE[v["oid"]], "lfs": True}
                elif item["key"] in ("deletedFile", "deletedFolder"):
                    for p in [p for p in files if p == v["path"] or p.startswith(v["path"].rstrip("/") + "/")]:
                        del files[p]
            oid = self.new_commit(repo_id, revision["commit"], files, header.get("summary", ""))
            revision["commit"], revision["files"] = oid, files
            self.CONFIG["repos"][repo_id].setdefault("commits", {})[oid] = files
        self.json_reply({"commitUrl": f"{self.endpoint()}/{repo_id}/commit/{oid}", "commitOid": oid, "success": True})

    def new_commit(self, repo_id, parent, files, summary=""):
        """A commit id from the repository, the parent, the summary, the time and the files."""
        h = hashlib.sha1(f"{repo_id}\0{parent}\0{summary}\0{time.time_ns()}".encode())
        for path in sorted(files):
            h.update(path.encode() + b"\0")
        return h.hexdigest()
