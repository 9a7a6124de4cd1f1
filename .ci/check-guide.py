#!/usr/bin/env python3
"""The built user guide, checked as a reader gets it.

Usage: check-guide.py BOOK_DIR [CHROMIUM]

1. Every link and asset of every built page (href, src) that stays inside the book resolves to a
   file of the book, and every #anchor to an id on the page it names.
2. With CHROMIUM (a headless Chromium binary), the first page and the contract-format page are
   rendered: any console error, failed load of an asset or uncaught exception fails the check.

Exit 0 when clean, 1 with every problem listed.
"""

import html.parser
import os
import re
import subprocess
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            # <base href="/"> is mdBook's site root for the 404 page, not a link.
            if name in ("href", "src") and value and tag != "base":
                self.links.append((tag, value))


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as handle:
        page.feed(handle.read())
    return page


def check_links(book):
    problems = []
    pages = {}
    for folder, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(folder, name))
                pages[path] = parse(path)
    if not pages:
        return [f"{book}: no built pages (did mdbook build run?)"]
    checked = 0
    for path, page in sorted(pages.items()):
        for tag, link in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = path
            if parts.path:
                target = os.path.normpath(
                    os.path.join(os.path.dirname(path), urllib.parse.unquote(parts.path))
                )
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
            where = os.path.relpath(path, book)
            if not os.path.abspath(target).startswith(os.path.abspath(book) + os.sep):
                problems.append(f"{where}: <{tag}> {link} leaves the book")
                continue
            if not os.path.exists(target):
                problems.append(f"{where}: <{tag}> {link}: {os.path.relpath(target, book)} is missing")
                continue
            checked += 1
            if parts.fragment and target.endswith(".html"):
                anchor = urllib.parse.unquote(parts.fragment)
                known = pages.get(target) or parse(target)
                if anchor not in known.ids:
                    problems.append(
                        f"{where}: {link}: no element with id `{anchor}` on {os.path.relpath(target, book)}"
                    )
    # What the stylesheets load (fonts, images): a missing one is not in any page's links.
    for folder, _, files in os.walk(book):
        for name in files:
            if not name.endswith(".css"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            for reference in re.findall(r"url\(\s*['\"]?([^'\")]+)", text):
                if re.match(r"^[a-z]+:", reference) or reference.startswith("#"):
                    continue
                target = os.path.normpath(os.path.join(folder, reference.split("?")[0].split("#")[0]))
                if os.path.exists(target):
                    checked += 1
                else:
                    problems.append(f"{os.path.relpath(path, book)}: url({reference}) is missing")
    print(f"check-guide: {len(pages)} pages, {checked} internal links and assets resolved")
    return problems


def render(book, chromium, page):
    """Loads one page in headless Chromium; returns what went wrong, as Chromium logged it."""
    url = "file://" + os.path.abspath(os.path.join(book, page))
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    problems = []
    if result.returncode != 0:
        problems.append(f"{page}: Chromium exited {result.returncode}: {result.stderr[-2000:]}")
    for line in result.stderr.splitlines():
        lowered = line.lower()
        # Chromium logs every console message (console.error, uncaught exceptions) as
        # `INFO:CONSOLE`, whatever its level; the guide's own scripts log nothing.
        if ":console" in lowered:
            problems.append(f"{page}: {line.strip()}")
        elif "err_file_not_found" in lowered or "failed to load" in lowered:
            problems.append(f"{page}: {line.strip()}")
    if "<main" not in result.stdout:
        problems.append(f"{page}: the rendered page has no <main> element")
    return problems


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    book = os.path.normpath(sys.argv[1])
    problems = check_links(book)
    if len(sys.argv) == 3:
        for page in ("index.html", "reference/contract-format.html"):
            problems += render(book, sys.argv[2], page)
        print("check-guide: rendered index.html and reference/contract-format.html in Chromium")
    for problem in problems:
        print(f"check-guide: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
