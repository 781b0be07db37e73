#!/usr/bin/python3
"""Drives the Hub stand-in (tests/py/hub_server.py with its write side tests/py/hub_write.py) with
huggingface_hub itself: the check that the stand-in answers create_repo, create_branch,
upload_folder (preupload, the LFS batch API basic and multipart, verify, the NDJSON commit) and
hf_hub_download as the real client expects, so that trainrun's push and download tests, which
run against the stand-in, test the Hub's protocol and not the stand-in's idea of it. Run by hand
where huggingface_hub is importable (it is not a Debian package: put a huggingface_hub source
tree's src folder on PYTHONPATH; its dependencies httpx, filelock, fsspec, pyyaml, tqdm, packaging
are Debian's python3-*; without hf_xet installed the client takes the LFS path, as here; Debian
12's filelock 3.9 predates FileLock's `mode` argument, which huggingface_hub passes: where it
lacks it, the script drops the argument, a lock file's permissions being no part of the check):

    PYTHONPATH=HUGGINGFACE_HUB/src scripts/hub-upload-check.py [-v]

Starts the stand-in on 127.0.0.1 with a temporary config, points HF_ENDPOINT, HF_TOKEN and
HF_HUB_CACHE at it and at a temporary cache, then: create_repo twice (the second answered 409,
taken by exist_ok); upload_folder of model.safetensors (3 MB: a multipart LFS upload in 6 parts),
config.json, README.md with a model card's YAML front matter, a binary training_curves.png and
recipe.yaml; hf_hub_download of each, byte for byte; the same upload again (nothing PUT, no
commit); a changed config.json (a regular file commit, nothing PUT); create_branch and an upload
to and download from the branch; a private repository that an anonymous download cannot see; a
wrong token (403, the stand-in's message in the exception); and, on a second stand-in that fails
the first multipart PUT with 503, the client's retry. Prints a line per step, PASS or FAIL with
its figures (files, bytes, PUTs, parts), and exits 1 on a FAIL. -v shows the client's log.

With --trainrun, the same client checks what trainrun's own push commits, on a fresh stand-in:

    PYTHONPATH=HUGGINGFACE_HUB/src:TIMM_SOURCE scripts/hub-upload-check.py --trainrun build/trainrun RUN_DIR \
        [--timm IMAGE PREDICT_JSONL [--st-shim]]

RUN_DIR is a finished run's output.dir. `TRAINRUN push RUN_DIR --repo org/pushed --license mit`
(HF_ENDPOINT, HF_TOKEN and a temporary HF_HOME in its environment); HfApi.model_info's siblings
(model.safetensors, config.json, README.md, recipe.yaml, labels.json where the run has one, and
training_curves.png where the run's metrics draw one); hf_hub_download of each: model.safetensors
byte-identical to RUN_DIR/model.safetensors, recipe.yaml to RUN_DIR/recipe.resolved.yaml,
labels.json to RUN_DIR/labels.json (where the run has none: that it parses), config.json a timm
config with an "architecture", README.md a model card whose YAML front matter parses and carries
the license; the same push again sends no PUT and makes no commit (the request log). --timm then
loads hf-hub:org/pushed from the stand-in with timm (scripts/timm-load-check.py, run with
HF_ENDPOINT at the stand-in; timm must be importable, PYTHONPATH above; --st-shim is passed on to
it where safetensors is not installed) and compares its logits for IMAGE with PREDICT_JSONL's
(`trainrun predict RUN_DIR/recipe.resolved.yaml --checkpoint RUN_DIR --images IMAGE`): PASS at a
largest absolute difference of 1e-4 or less.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "tests", "py", "hub_server.py")
TIMM_CHECK = os.path.join(HERE, "timm-load-check.py")
TOKEN = "hf_write"
TMP = None  # main's temporary folder
FAILED = []


class Hub:
    """A stand-in process, its endpoint and its request log."""

    def __init__(self, name, **config):
        config.update(token=TOKEN, multipart_threshold=1024 * 1024, chunk_size=512 * 1024)
        path = os.path.join(TMP, name + ".json")
        self.log = os.path.join(TMP, name + ".log")
        json.dump(config, open(path, "w"))
        self.proc = subprocess.Popen([sys.executable, SERVER, path, self.log], stdout=subprocess.PIPE)
        self.endpoint = "http://127.0.0.1:%d" % int(self.proc.stdout.readline())
        self.mark = 0

    def requests(self):
        """The requests since the last call, as [method, path] lists."""
        lines = open(self.log).read().splitlines() if os.path.exists(self.log) else []
        new, self.mark = lines[self.mark:], len(lines)
        return [line.split(" ")[:2] for line in new]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def counts(requests):
    puts = [p for m, p in requests if m == "PUT"]
    commits = [p for m, p in requests if m == "POST" and "/commit/" in p]
    return {"PUT": len(puts), "parts": sum("/lfs-part/" in p for p in puts), "commits": len(commits)}


def report(step, ok, text):
    print(f"{'PASS' if ok else 'FAIL'} {step}: {text}", flush=True)
    if not ok:
        FAILED.append(step)


def make_folder():
    folder = os.path.join(TMP, "model")
    os.makedirs(folder)
    files = {"model.safetensors": os.urandom(3 * 1024 * 1024),
             "config.json": b'{"architecture": "resnet18", "num_classes": 3}\n',
             "README.md": b"---\nlibrary_name: timm\nlicense: apache-2.0\n---\n# card\n",
             "training_curves.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 4,
             "recipe.yaml": b"model: resnet18\nepochs: 2\n"}
    for name, data in files.items():
        open(os.path.join(folder, name), "wb").write(data)
    return folder, files


def same_files(hf_hub_download, files, **kw):
    """The names of the files whose download differs from `files`."""
    return [n for n, data in files.items() if open(hf_hub_download("org/model", n, **kw), "rb").read() != data]


def step_create(api, hub):
    first = api.create_repo("org/model", exist_ok=True)
    second = api.create_repo("org/model", exist_ok=True)
    n = sum(p == "/api/repos/create" for m, p in hub.requests())
    ok = n == 2 and first == second == hub.endpoint + "/org/model"
    report("1 create_repo x2", ok, f"{n} POST /api/repos/create, the second's 409 taken by exist_ok, both {second}")


def step_upload(api, hub, folder, files, hf_hub_download):
    info = api.upload_folder(repo_id="org/model", folder_path=folder, commit_message="first")
    c = counts(hub.requests())
    ok = c["parts"] == 6 and c["PUT"] == 7 and c["commits"] == 1
    report("2 upload_folder", ok, f"{len(files)} files, {sum(map(len, files.values()))} bytes, {c['PUT']} PUTs "
           f"({c['parts']} multipart parts + 1 basic), {c['commits']} commit {info.oid[:12]}")
    bad = same_files(hf_hub_download, files)
    hub.requests()
    report("3 hf_hub_download", not bad, f"{len(files) - len(bad)}/{len(files)} files byte-identical"
           + (f"; differ: {bad}" if bad else ""))
    return info.oid


def step_again(api, hub, folder, first_oid):
    info = api.upload_folder(repo_id="org/model", folder_path=folder, commit_message="again")
    req = hub.requests()
    c = counts(req)
    ok = c["PUT"] == 0 and c["commits"] == 0 and info.oid == first_oid
    report("4 same upload again", ok, f"{c['PUT']} PUTs, {c['commits']} commits: the client skipped the empty "
           f"commit, head still {info.oid[:12]}; requests: " + ", ".join(f"{m} {p}" for m, p in req))


def step_changed(api, hub, folder, files, hf_hub_download):
    files["config.json"] = b'{"architecture": "resnet18", "num_classes": 4}\n'
    open(os.path.join(folder, "config.json"), "wb").write(files["config.json"])
    api.upload_folder(repo_id="org/model", folder_path=folder, commit_message="config")
    c = counts(hub.requests())
    bad = same_files(hf_hub_download, files)
    ok = c["PUT"] == 0 and c["commits"] == 1 and not bad
    report("5 changed config.json", ok, f"{c['PUT']} PUTs, {c['commits']} commit, downloads "
           + ("identical" if not bad else f"differ: {bad}"))


def step_branch(api, hub, files, hf_hub_download):
    api.create_branch("org/model", branch="dev")
    api.create_branch("org/model", branch="dev", exist_ok=True)
    folder = os.path.join(TMP, "dev")
    os.makedirs(folder)
    branch_files = dict(files, **{"config.json": b'{"architecture": "resnet18", "num_classes": 5}\n'})
    open(os.path.join(folder, "config.json"), "wb").write(branch_files["config.json"])
    api.upload_folder(repo_id="org/model", folder_path=folder, revision="dev", commit_message="dev")
    c = counts(hub.requests())
    bad = same_files(hf_hub_download, branch_files, revision="dev") + same_files(hf_hub_download, files)
    ok = c["commits"] == 1 and c["PUT"] == 0 and not bad
    report("6 branch dev", ok, f"{c['commits']} commit to dev, {len(branch_files)} files from dev and "
           f"{len(files)} from main " + ("as pushed" if not bad else f"differ: {bad}"))


def step_private(api, hf_hub_download, errors):
    api.create_repo("org/secret", private=True)
    api.upload_file(repo_id="org/secret", path_or_fileobj=b"{}\n", path_in_repo="config.json")
    try:
        hf_hub_download("org/secret", "config.json", token=False)
        return report("7 private repo", False, "the anonymous download succeeded")
    except errors.RepositoryNotFoundError as e:
        status = e.response.status_code
    ok = status == 401 and open(hf_hub_download("org/secret", "config.json"), "rb").read() == b"{}\n"
    report("7 private repo", ok, f"anonymous: RepositoryNotFoundError {status}; with the token: downloaded")


def step_wrong_token(HfApi, errors, folder):
    try:
        HfApi(token="hf_wrong").upload_folder(repo_id="org/model", folder_path=folder)
        return report("8 wrong token", False, "the upload succeeded")
    except errors.HfHubHTTPError as e:
        status, text = e.response.status_code, str(e)
    ok = status == 403 and "don't have the rights" in text
    report("8 wrong token", ok, f"HfHubHTTPError {status}: {text.splitlines()[0][:60]}... "
           + ("with" if ok else "WITHOUT") + " the server's message")


def step_fault(HfApi, folder, files, hf_hub_download):
    hub = Hub("fault", faults=[{"method": "PUT", "path": "/lfs-part/", "status": 503, "count": 1}])
    try:
        api = HfApi(endpoint=hub.endpoint)
        api.create_repo("org/model")
        api.upload_folder(repo_id="org/model", folder_path=folder, commit_message="retry")
        c = counts(hub.requests())
        bad = same_files(hf_hub_download, files, endpoint=hub.endpoint)
        ok = c["parts"] == 7 and c["commits"] == 1 and not bad
        report("9 503 on a part", ok, f"{c['parts']} part PUTs (6 + 1 retried), {c['commits']} commit, downloads "
               + ("identical" if not bad else f"differ: {bad}"))
    finally:
        hub.stop()


def shim_filelock():
    """timm-load-check.py's shim (filelock before 3.10 has no FileLock(mode=...)), for this
    script's own huggingface_hub calls."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("timm_load_check", os.path.join(HERE, "timm-load-check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.shim_filelock()


def tail(proc):
    """A failed command's last output, on one line."""
    return (proc.stdout + proc.stderr).strip()[-400:].replace("\n", " | ")


class Pushed:
    """trainrun's push of a run to org/pushed on a fresh stand-in, and what huggingface_hub reads of it."""

    def __init__(self, args, HfApi, hf_hub_download):
        self.args, self.run = args, args.trainrun[1]
        self.hub = Hub("push")
        self.api = HfApi(endpoint=self.hub.endpoint)
        self.download = lambda name: hf_hub_download("org/pushed", name, endpoint=self.hub.endpoint,
                                                     cache_dir=os.path.join(TMP, "push-cache"))
        self.env = dict(os.environ, HF_ENDPOINT=self.hub.endpoint, HF_TOKEN=TOKEN,
                        HF_HOME=os.path.join(TMP, "hf-home"))
        self.env.pop("HF_HUB_CACHE")
        self.siblings = []

    def push(self):
        cmd = [self.args.trainrun[0], "push", self.run, "--repo", "org/pushed", "--license", "mit"]
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        return p, counts(self.hub.requests())

    def step_push(self):
        p, c = self.push()
        out = (p.stdout.strip().splitlines() or [""])[-1]
        ok = p.returncode == 0 and c["commits"] == 1 and c["PUT"] >= 1
        report("10 trainrun push", ok, f"exit {p.returncode}, {c['PUT']} PUTs ({c['parts']} multipart parts), "
               f"{c['commits']} commit; " + (out.split(" http")[0] if ok else tail(p)))
        return ok

    def step_siblings(self):
        self.siblings = [s.rfilename for s in self.api.model_info("org/pushed").siblings]
        want = ["model.safetensors", "config.json", "README.md", "recipe.yaml"]
        want += ["labels.json"] if os.path.exists(os.path.join(self.run, "labels.json")) else []
        missing = [n for n in want if n not in self.siblings]
        report("11 model_info siblings", not missing, f"{len(self.siblings)} files: {', '.join(self.siblings)}"
               + (f"; missing: {missing}" if missing else ""))

    def step_downloads(self):
        names = [n for n in self.siblings if n != ".gitattributes"] or ["model.safetensors"]
        got = {n: open(self.download(n), "rb").read() for n in names}
        self.hub.requests()
        same = {"model.safetensors": "model.safetensors", "recipe.yaml": "recipe.resolved.yaml",
                "labels.json": "labels.json"}
        checked, bad = [], []
        for name, local in same.items():
            path = os.path.join(self.run, local)
            if name == "labels.json" and not os.path.exists(path):  # the run has none: what was pushed parses
                checked.append(f"labels.json parses ({len(json.loads(got.get(name, b'[]')))} labels)")
                continue
            checked.append(f"{name} byte-identical to RUN_DIR/{local}")
            if got.get(name) != open(path, "rb").read():
                bad.append(name)
        report("12 hf_hub_download", not bad, f"{len(got)} files (all but .gitattributes), "
               f"{sum(map(len, got.values()))} bytes; " + "; ".join(checked) + (f"; differ: {bad}" if bad else ""))
        self.got = got

    def step_config(self):
        config = json.loads(self.got["config.json"])
        cfg = config.get("pretrained_cfg", {})
        ok = bool(config.get("architecture"))
        report("13 config.json", ok, f"architecture {config.get('architecture')!r}, num_classes "
               f"{config.get('num_classes')}, {len(config.get('label_names', []))} label_names, "
               f"pretrained_cfg mean {cfg.get('mean')} std {cfg.get('std')}")

    def step_card(self):
        text = self.got["README.md"].decode()
        lines = text.splitlines()
        end = lines.index("---", 1) if lines[:1] == ["---"] and "---" in lines[1:] else 0
        meta = yaml.safe_load("\n".join(lines[1:end])) if end else None
        ok = isinstance(meta, dict) and meta.get("license") == "mit"
        report("14 README.md", ok, (f"front matter ({end - 1} lines) parses: license {meta.get('license')!r}, "
                                    f"library_name {meta.get('library_name')!r}, tags {meta.get('tags')}"
                                    if isinstance(meta, dict) else f"no YAML front matter: {text[:60]!r}"))

    def step_again(self):
        p, c = self.push()
        out = (p.stdout.strip().splitlines() or [""])[-1]
        ok = p.returncode == 0 and c["PUT"] == 0 and c["commits"] == 0
        report("15 trainrun push again", ok, f"exit {p.returncode}, {c['PUT']} PUTs, {c['commits']} commits; "
               + (out if p.returncode == 0 else tail(p)))

    def step_timm(self):
        image, predicted = self.args.timm
        env = dict(self.env, HF_HUB_CACHE=os.path.join(TMP, "timm-cache"))
        cmd = [sys.executable, TIMM_CHECK, "hf-hub:org/pushed", image, predicted] + ["--st-shim"] * self.args.st_shim
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        fetched = sorted({path.rsplit("/", 1)[-1] for _, path in self.hub.requests() if "/org/pushed/resolve/" in path})
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or [""])[-1][:300]
            return report("16 timm hf-hub", False, f"exit {p.returncode}: {last}"
                          + (" (no safetensors? --st-shim)" if "pytorch_model.bin" in last else ""))
        r = json.loads(p.stdout.strip().splitlines()[-1])
        d = r["max_abs_difference"]
        report("16 timm hf-hub", d <= 1e-4, f"timm {r['timm']}, torch {r['torch']}: create_model({r['source']!r}) "
               f"-> {r['model']}, read {', '.join(fetched)}; logits vs PREDICT_JSONL max abs difference {d:.3g}")

    def run_steps(self):
        try:
            if not self.step_push():
                return
            steps = [("11", self.step_siblings), ("12", self.step_downloads), ("13", self.step_config),
                     ("14", self.step_card), ("15", self.step_again)]
            steps += [("16", self.step_timm)] if self.args.timm else []
            for name, step in steps:
                try:
                    step()
                except Exception as e:
                    report(name, False, f"{type(e).__name__}: {e}".replace("\n", " | ")[:400])
                    self.hub.requests()
        finally:
            self.hub.stop()


def run_steps(hub, args):
    shim_filelock()
    import huggingface_hub
    from huggingface_hub import HfApi, errors, hf_hub_download
    (huggingface_hub.logging.set_verbosity_info if args.v else huggingface_hub.logging.set_verbosity_error)()
    print(f"huggingface_hub {huggingface_hub.__version__} from {os.path.dirname(huggingface_hub.__file__)}")
    folder, files = make_folder()
    api, ids = HfApi(), []
    steps = [("1", lambda: step_create(api, hub)),
             ("2-3", lambda: ids.append(step_upload(api, hub, folder, files, hf_hub_download))),
             ("4", lambda: step_again(api, hub, folder, ids[0])),
             ("5", lambda: step_changed(api, hub, folder, files, hf_hub_download)),
             ("6", lambda: step_branch(api, hub, files, hf_hub_download)),
             ("7", lambda: step_private(api, hf_hub_download, errors)),
             ("8", lambda: step_wrong_token(HfApi, errors, folder)),
             ("9", lambda: step_fault(HfApi, folder, files, hf_hub_download))]
    for name, step in steps:
        try:
            step()
        except Exception as e:  # a step that raised: FAIL with the client's error, on to the next
            report(name, False, f"{type(e).__name__}: {e}".replace("\n", " | ")[:400])
            hub.requests()
    if args.trainrun:
        Pushed(args, HfApi, hf_hub_download).run_steps()


def main():
    parser = argparse.ArgumentParser(description="huggingface_hub against the Hub stand-in (see the docstring)")
    parser.add_argument("-v", action="store_true", help="the client's log")
    parser.add_argument("--trainrun", nargs=2, metavar=("TRAINRUN", "RUN_DIR"),
                        help="also check TRAINRUN push RUN_DIR")
    parser.add_argument("--timm", nargs=2, metavar=("IMAGE", "PREDICT_JSONL"), help="and load the push with timm")
    parser.add_argument("--st-shim", action="store_true", help="timm-load-check.py --st-shim")
    args = parser.parse_args()
    if args.timm and not args.trainrun:
        parser.error("--timm needs --trainrun")
    global TMP
    TMP = tempfile.mkdtemp(prefix="hub-upload-check-")
    hub = Hub("hub")
    os.environ.update(HF_ENDPOINT=hub.endpoint, HF_TOKEN=TOKEN, HF_HUB_CACHE=os.path.join(TMP, "cache"),
                      HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
    try:
        run_steps(hub, args)
    finally:
        hub.stop()
        shutil.rmtree(TMP, ignore_errors=True)
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all passed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
