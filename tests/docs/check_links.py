#!/usr/bin/env python3
"""Checks a built documentation site (Docs.SiteBuildsStrict runs it) and the pages' sources.

usage: check_links.py SOURCE_DIR SITE_DIR
       check_links.py --sources SOURCE_DIR     (the sources only; Docs.NoLinkOrPathOnAPageLeavesTheRepository)

- no page under SOURCE_DIR/docs and not README.md sends the reader outside the repository: a
  relative link (markdown, a reference definition, an HTML href/src) resolved from the page's
  folder, and a relative path in the text or a code block (`../x`), read from the repository root
  as the pages' commands are, must stay inside SOURCE_DIR;

- every page under SOURCE_DIR/docs is in mkdocs.yml's nav (mkdocs 1.4 only logs an INFO line
  for a page left out, which --strict lets pass);
- every relative link in the built HTML names a file of the site, and its #anchor an id in it
  (mkdocs 1.4 does not check anchors at all);
- nothing a page loads comes from another machine: no script, stylesheet, image, font or
  iframe with an http(s):// or protocol-relative address.
Prints one line per problem and exits 1 when there is any.
"""
import os
import re
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit



class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.loads = set(), [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])
        for key in ("src", "href"):
            if key in a and a[key] and tag in ("script", "img", "iframe", "link", "source", "video", "audio"):
                if tag == "link" and not set((a.get("rel") or "").split()) & {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "preconnect", "dns-prefetch", "manifest"}:
                    continue
                self.loads.append((tag, a[key]))


def nav_files(config_text):
    """The .md files mkdocs.yml's nav names (read as text: PyYAML need not be on this python)."""
    nav, files = False, set()
    for line in config_text.splitlines():
        if re.match(r"^nav:", line):
            nav = True
        elif nav and re.match(r"^\S", line):
            nav = False
        elif nav:
            m = re.search(r"(?:-|:)\s*([\w./-]+\.md)\s*$", line)
            if m:
                files.add(m.group(1))
    return files


def setting(config_text, key, default):
    m = re.search(r"^%s:\s*(\S+)" % key, config_text, re.M)
    return m.group(1) if m else default


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)[^)]*\)|^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)|\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.M)
# a path that starts by going up: `../x`, not `.../x` (an elision) or `$ORIGIN/../lib` (inside another path)
UP_PATH = re.compile(r"(?<![\w.$/~-])(?:\.\./)+[^\s`'\"()<>\[\]|,;]*")


def inside(path, root):
    return os.path.commonpath([path, root]) == root


def source_problems(source):
    """Links and paths of docs/**/*.md and README.md that resolve outside the repository."""
    root = os.path.realpath(source)
    pages = [os.path.join(root, "README.md")]
    for folder, _, files in os.walk(os.path.join(root, "docs")):
        pages += [os.path.join(folder, n) for n in sorted(files) if n.endswith(".md")]
    problems = []
    for page in pages:
        if not os.path.isfile(page):
            continue
        where = os.path.relpath(page, root)
        for number, line in enumerate(open(page, encoding="utf-8").read().split("\n"), 1):
            rest = line
            for m in LINK.finditer(line):
                target = next(g for g in m.groups() if g is not None)
                rest = rest.replace(m.group(0), " ")
                parts = urlsplit(target)
                if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
                    continue  # another machine, an anchor on this page, the site's root
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), unquote(parts.path)))
                if not inside(resolved, root):
                    problems.append(f"{where}:{number}: link {target} leaves the repository ({resolved})")
            for m in UP_PATH.finditer(rest):
                resolved = os.path.normpath(os.path.join(root, m.group(0)))
                if not inside(resolved, root):
                    problems.append(f"{where}:{number}: path {m.group(0)} leaves the repository "
                                    f"(read from the repository root, as the pages' commands are: {resolved})")
    return len(pages), problems


def main_sources(source):
    count, problems = source_problems(source)
    for line in problems:
        print(line)
    print(f"check_links: sources: {count} pages, {len(problems)} links or paths leaving the repository")
    return 1 if problems else 0


def main(source, site):
    problems = source_problems(source)[1]
    config = open(os.path.join(source, "mkdocs.yml"), encoding="utf-8").read()
    docs = os.path.join(source, setting(config, "docs_dir", "docs"))
    in_nav = nav_files(config)
    if not in_nav:
        problems.append("mkdocs.yml: no nav found")
    for root, _, files in os.walk(docs):
        for name in files:
            if name.endswith(".md"):
                page = os.path.relpath(os.path.join(root, name), docs)
                if page not in in_nav:
                    problems.append(f"{page}: not in mkdocs.yml's nav")

    pages = {}
    for root, _, files in os.walk(site):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(root, name)
                p = Page()
                p.feed(open(path, encoding="utf-8").read())
                pages[os.path.normpath(path)] = p
    for path, page in sorted(pages.items()):
        where = os.path.relpath(path, site)
        for tag, url in page.loads:
            if url.startswith(("http:", "https:", "//")):
                problems.append(f"{where}: <{tag}> loads {url} from another machine")
        if where == "404.html":
            continue  # its links are absolute to the site's root, by design
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = path if not parts.path else os.path.normpath(os.path.join(os.path.dirname(path), unquote(parts.path)))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            if not os.path.exists(target):
                problems.append(f"{where}: link {href}: no such file in the site")
                continue
            if parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                problems.append(f"{where}: link {href}: no anchor #{parts.fragment} in {os.path.relpath(target, site)}")
    for line in problems:
        print(line)
    print(f"check_links: {len(pages)} pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    if sys.argv[1] == "--sources":
        sys.exit(main_sources(sys.argv[2]))
    sys.exit(main(sys.argv[1], sys.argv[2]))
