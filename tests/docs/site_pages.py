"""The pages of a built documentation site, for browser_check.py: read from the site's own
navigation (its start page), each page's file and text.
"""

import html
import html.parser
import json
import os
import re
import urllib.parse


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
