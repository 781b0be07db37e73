"""WebDataset's grouping and field rules, the reference for tests/components/webdataset_grouping_test.cpp
(WebDatasetGrouping.*): tar shards with odd names, and what webdataset itself reads from them.

usage:
  webdataset_ref.py make DIR
      writes the fixture shards into DIR with Python's own tarfile (no webdataset needed: the C++
      test runs this at test time).
  webdataset_ref.py expect DIR WEBDATASET_SRC OUT.json
      makes the shards in DIR as `make` does, then runs webdataset's own pipeline over them and
      writes OUT.json (tests/data/webdataset/expected.json).

To rerun (webdataset is not packaged for Debian and is never committed here; braceexpand is, as
python3-braceexpand 0.1.7-3):
  apt-get install python3-braceexpand
  git -C <webdataset mirror> archive e0953f9bba17b416d5792d5a263b171c266e78be src | tar -x -C /tmp/wds
  /usr/bin/python3 tests/py/webdataset_ref.py expect /tmp/wds-shards /tmp/wds \\
      tests/data/webdataset/expected.json

WEBDATASET_SRC is a checkout (or `git archive ... src`) of github.com/webdataset/webdataset at
e0953f9bba17b416d5792d5a263b171c266e78be (webdataset 1.0.2); the whole package imports with
Debian 12's python3 (numpy, yaml, torch), nothing is stubbed. Everything in OUT.json is the output of
that code, run on these shards:
  cases         per shard list: the samples of tariterators.tarfile_samples([{"url": shard}, ...])
                (its body: url_opener -> tar_file_expander -> group_by_keys, handler
                reraise_exception), run in DIR with relative shard names, in order: __key__, __url__
                and each field's bytes (size, sha256, and "text" when printable ASCII, else "hex");
                where the pipeline raises, the samples it yielded before, the error's class and
                first argument (webdataset appends the stream and url, None here, to the args), and
                the shard and member group_by_keys was at (its message names the member only).
  shards        sha256 of each uncompressed shard this script wrote (the C++ test checks its own
                `make` wrote the same bytes).
  base_plus_ext tariterators.base_plus_ext(name) -> [key, field], or null for (None, None).
  is_meta       whether tar_file_iterator leaves a regular member of that name out (each name
                written to a one-member tar and read back with tar_file_iterator).
  expand_urls   shardlists.expand_urls(pattern) -> list, or the error, with no WDS_* variable set.
  expand_urls_env  the same with the given WDS_* environment: expand_urls first replaces
                ${NAME} with $WDS_NAME (up to 10 rounds, AssertionError when unset), then
                brace-expands.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

WEBDATASET_COMMIT = "e0953f9bba17b416d5792d5a263b171c266e78be"
MTIME = 1700000000


def blob(tag, n):
    """Binary bytes standing in for an image: NULs, high bytes, no text."""
    return bytes((i * 37 + len(tag) * 11 + ord(tag[0])) % 256 for i in range(n))


JPEG = lambda tag: b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + blob(tag, 40)
PNG = lambda tag: b"\x89PNG\r\n\x1a\n\x00\x00" + blob(tag, 30)


def member(name, data=b"", kind=tarfile.REGTYPE, link=""):
    return (name, data, kind, link)


def d(name):
    return member(name, kind=tarfile.DIRTYPE)


# Shard name -> (tarfile format, pax global headers, members in order).
SHARDS = {
    # Dots in directories, several extensions, upper-case extensions, an empty field, a hidden
    # base name, a long (PAX) name, non-ASCII (PAX) names, a space.
    "names.tar": (tarfile.PAX_FORMAT, None, [
        d("a.b/"),
        member("a.b/c.jpg", JPEG("c")),
        member("a.b/c.cls", b"1"),
        member("a.b/c.d/e.seg.png", PNG("e")),
        member("x.seg.png", PNG("x")),
        member("x.jpg", JPEG("x")),
        member("x.cls", b"2"),
        member("Y.JPG", JPEG("Y")),
        member("Y.Cls", b"4"),
        member("t.", b"empty field name"),
        member("v..bak", b"dot dot"),
        member("dir/.hidden.txt", b"hidden"),
        member("long-" + "d" * 70 + "/sample_" + "n" * 40 + ".seg.txt", b"long name"),
        member("donn\u00e9es/\u00e9.jpg", JPEG("e")),
        member("sp ace.txt", b"space"),
    ]),
    # One sample with every kind of member webdataset leaves out in its middle: they neither
    # join nor end it. An old-style (V7, typeflag NUL) regular file after it.
    "skipped.tar": (tarfile.PAX_FORMAT, None, [
        member("m.jpg", JPEG("m")),
        d("m.d/"),
        member("m.png", kind=tarfile.SYMTYPE, link="m.jpg"),
        member("m.webp", kind=tarfile.LNKTYPE, link="m.jpg"),
        member("m.fifo", kind=tarfile.FIFOTYPE),
        member("__meta__", b"meta"),
        member("__index__/m.txt", b"index"),
        member("noext", b"no dot"),
        member("dir.d/noext", b"no dot in base"),
        member("m.cls", b"5"),
        member("old.txt", b"v7 regular", kind=tarfile.AREGTYPE),
    ]),
    # A key again after another (a new sample, the same field allowed again), an empty member,
    # labels as .cls and .json.
    "repeat.tar": (tarfile.PAX_FORMAT, None, [
        member("p.jpg", JPEG("p")),
        member("p.cls", b"6"),
        member("q.jpg", JPEG("q")),
        member("p.jpg", JPEG("P")),
        member("e.txt", b""),
        member("e.cls", b"0"),
        member("s.cls", b"7"),
        member("s.json", b'{"label": 3}'),
    ]),
    # Key k at the end of one shard and the start of the next.
    "split-0.tar": (tarfile.PAX_FORMAT, None, [
        member("a.jpg", JPEG("a")),
        member("a.cls", b"1"),
        member("k.jpg", JPEG("k")),
    ]),
    "split-1.tar": (tarfile.PAX_FORMAT, None, [
        member("k.cls", b"2"),
        member("b.jpg", JPEG("b")),
        member("b.cls", b"3"),
    ]),
    # As `tar -C dir -cf shard.tar .` writes it.
    "dot-slash.tar": (tarfile.PAX_FORMAT, None, [
        d("./"),
        member("./k1.jpg", JPEG("1")),
        member("./k1.cls", b"1"),
        d("./sub/"),
        member("./sub/k2.jpg", JPEG("2")),
    ]),
    # GNU long names (././@LongLink) and raw UTF-8 in the header.
    "gnu.tar": (tarfile.GNU_FORMAT, None, [
        member("gnu/" + "L" * 110 + ".jpg", JPEG("L")),
        member("gnu/" + "L" * 110 + ".cls", b"8"),
        member("gnu/\u00e9t\u00e9.cls", b"9"),
    ]),
    # A pax global header first, as `git archive` writes one.
    "pax-global.tar": (tarfile.PAX_FORMAT, {"comment": WEBDATASET_COMMIT}, [
        member("g.jpg", JPEG("g")),
        member("g.cls", b"1"),
    ]),
    # Field names webdataset's own sample dict uses.
    "reserved.tar": (tarfile.PAX_FORMAT, None, [
        member("__key__.txt", b"a key that looks reserved"),
        member("l.__local_path__", b"lp"),
        member("z.txt", b"bad sample"),
        member("z.__bad__", b"1"),
        member("w.txt", b"not bad"),
        member("w.__bad__", b""),
    ]),
    # Errors: a field that collides with __key__ / __url__, and a field twice after lower-casing.
    "key-field.tar": (tarfile.PAX_FORMAT, None, [
        member("s0.jpg", JPEG("s")),
        member("s0.cls", b"0"),
        member("s1.__key__", b"s1"),
    ]),
    "url-field.tar": (tarfile.PAX_FORMAT, None, [
        member("u.__url__", b"http://example.com/"),
    ]),
    "dup-case.tar": (tarfile.PAX_FORMAT, None, [
        member("a.txt", b"first"),
        member("Y.JPG", JPEG("Y")),
        member("Y.jpg", JPEG("y")),
    ]),
}

GZIP_SHARDS = {"gz.tar.gz": [member("z.jpg", JPEG("z")), member("z.cls", b"1")]}

# (name, group, shard list). group is the C++ test that checks the case.
CASES = [
    ("names", "names", ["names.tar"]),
    ("skipped", "names", ["skipped.tar"]),
    ("repeat", "names", ["repeat.tar"]),
    ("dot-slash", "names", ["dot-slash.tar"]),
    ("gnu", "names", ["gnu.tar"]),
    ("pax-global", "names", ["pax-global.tar"]),
    ("split", "split", ["split-0.tar", "split-1.tar"]),
    ("gzip", "gzip", ["gz.tar.gz"]),
    ("reserved", "reserved", ["reserved.tar"]),
    ("key-field", "error", ["key-field.tar"]),
    ("url-field", "error", ["url-field.tar"]),
    ("dup-case", "error", ["dup-case.tar"]),
    ("error-after-a-shard", "error", ["split-0.tar", "dup-case.tar", "split-1.tar"]),
]

BASE_PLUS_EXT = [
    "a.b/c.jpg", "a.b/c.seg.jpg", "x.seg.png", "x.jpg", "Y.JPG", "noext", "dir/noext",
    "a.b/noext", "a/b.c/d", "dir/.hidden.txt", "a/b/.c.d", ".hidden", "x.", "v..bak",
    "./x.jpg", "./sub/k.cls", "x.tar.gz", "sp ace.txt", "__key__.txt", "s1.__key__",
    "n01440764/n01440764_10026.JPEG", "dir/", "", "donn\u00e9es/\u00e9.jpg",
]

IS_META = [
    "__meta__", "__index__/x.txt", "__a.b__", "__a__b__", "___", "____", "__x__.txt",
    "__key__.txt", "dir/__meta__", "dir/__x__/y.txt", "__a/b__/c.txt", "a__x__", "x.__key__",
    "__x__/y/z.jpg", "_x_.txt", "x.jpg",
]

EXPAND_URLS = [
    "data/train-{000000..000003}.tar", "shard-{0..2}.tar", "{a,b}-{0..1}.tar", "{1..3}{a,b}",
    "a.tar::b-{1..2}.tar", "a.tar::", "plain.tar", "{1..10}", "{07..10}", "{000..2}", "{3..1}",
    "{0..6..2}", "{-1..1}", "{a..c}", "{a}", "{}", "x{,.bak}", "python{2.{5..7},3.{2,3}}",
    "\\{a,b\\}.tar", "hf-hub:datasets/org/name@main/train-{000..001}.tar",
    "https://example.com/wds/shard-{00..01}.tar?download=true", "{a,b", "a}b", "$SPLIT.tar",
]

EXPAND_URLS_ENV = [
    ({"WDS_SPLIT": "train"}, "data/${SPLIT}-{0..1}.tar"),
    ({}, "data/${SPLIT}-{0..1}.tar"),
    ({"WDS_A": "${B}", "WDS_B": "{x,y}"}, "${A}.tar"),
]


def tar_bytes(fmt, pax_headers, members):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt, pax_headers=pax_headers) as tar:
        for name, data, kind, link in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.mtime = MTIME
            info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
            tar.addfile(info, io.BytesIO(data) if info.size else None)
    return out.getvalue()


def make(dirname):
    os.makedirs(dirname, exist_ok=True)
    hashes = {}
    for name, (fmt, pax_headers, members) in SHARDS.items():
        data = tar_bytes(fmt, pax_headers, members)
        with open(os.path.join(dirname, name), "wb") as f:
            f.write(data)
        hashes[name] = hashlib.sha256(data).hexdigest()
    for name, members in GZIP_SHARDS.items():
        with open(os.path.join(dirname, name), "wb") as f:
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
                gz.write(tar_bytes(tarfile.PAX_FORMAT, None, members))
    return hashes


def describe_bytes(data):
    out = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if all(32 <= b < 127 for b in data):
        out["text"] = data.decode("ascii")
    else:
        out["hex"] = data.hex()
    return out


def describe_error(exn):
    return {"class": type(exn).__name__, "message": str(exn.args[0]) if exn.args else ""}


def expect(dirname, wds_src, out_path):
    for k in [k for k in os.environ if k.startswith("WDS_")]:
        del os.environ[k]
    src = os.path.join(wds_src, "src") if os.path.isdir(os.path.join(wds_src, "src")) else wds_src
    sys.path.insert(0, os.path.abspath(src))
    import braceexpand
    import webdataset
    from webdataset import shardlists, tariterators

    hashes = make(dirname)
    os.chdir(dirname)
    cases = []
    for name, group, shards in CASES:
        samples, error, last = [], None, {}

        def tap(files):
            for f in files:
                last.update(f)
                yield f

        # tarfile_samples' own body, with a tap that remembers the member group_by_keys had last.
        streams = tariterators.url_opener([{"url": u} for u in shards])
        files = tariterators.tar_file_expander(streams)
        try:
            for s in tariterators.group_by_keys(tap(files)):
                samples.append({k: (v if k.startswith("__") and isinstance(v, str) else describe_bytes(v))
                                for k, v in s.items()})
        except Exception as exn:
            error = {**describe_error(exn), "shard": last.get("__url__"), "member": last.get("fname")}
        case = {"name": name, "group": group, "shards": shards, "samples": samples}
        if error:
            case["error"] = error
        cases.append(case)

    base_plus_ext = {}
    for n in BASE_PLUS_EXT:
        key, field = tariterators.base_plus_ext(n)
        base_plus_ext[n] = None if key is None else [key, field]

    is_meta = {}
    for n in IS_META:
        data = tar_bytes(tarfile.PAX_FORMAT, None, [member(n, b"x")])
        kept = [m["fname"] for m in tariterators.tar_file_iterator(io.BytesIO(data))]
        is_meta[n] = kept != [n]

    def expanded(pattern):
        try:
            return {"urls": shardlists.expand_urls(pattern)}
        except Exception as exn:
            return {"error": describe_error(exn)}

    expand_urls = {p: expanded(p) for p in EXPAND_URLS}
    expand_urls_env = []
    for env, pattern in EXPAND_URLS_ENV:
        os.environ.update(env)
        expand_urls_env.append({"env": env, "pattern": pattern, **expanded(pattern)})
        for k in env:
            del os.environ[k]

    doc = {
        "made_by": "tests/py/webdataset_ref.py expect",
        "webdataset_commit": WEBDATASET_COMMIT,
        "webdataset_version": webdataset.__version__,
        "braceexpand_version": braceexpand.__version__,
        "python": sys.version.split()[0],
        "shards": hashes,
        "cases": cases,
        "base_plus_ext": base_plus_ext,
        "is_meta": is_meta,
        "expand_urls": expand_urls,
        "expand_urls_env": expand_urls_env,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "expect":
        expect(sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
