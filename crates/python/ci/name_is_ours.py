"""Checks that a distribution name is free on PyPI, or already this project's.

usage: name_is_ours.py NAME REPOSITORY_URL

exit 0: the name is free (PyPI answers 404), or its project names REPOSITORY_URL among its URLs;
exit 1: somebody else's project holds it, so publishing would fail or, worse, look like theirs;
exit 2: PyPI could not be asked (the check says so rather than passing silently).
"""

import json
import sys
import urllib.error
import urllib.request


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    name, repository = sys.argv[1], sys.argv[2].rstrip("/")
    url = f"https://pypi.org/pypi/{name}/json"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            info = json.load(response)["info"]
    except urllib.error.HTTPError as error:
        if error.code == 404:
            print(f"python ci: the distribution name {name} is free on PyPI")
            return 0
        print(f"python ci: PyPI answered {error.code} for {url}", file=sys.stderr)
        return 2
    except (urllib.error.URLError, TimeoutError, ValueError, KeyError) as error:
        print(f"python ci: could not ask PyPI about {name}: {error}", file=sys.stderr)
        return 2
    urls = [str(value).rstrip("/") for value in (info.get("project_urls") or {}).values()]
    if repository in urls or str(info.get("home_page") or "").rstrip("/") == repository:
        print(f"python ci: {name} on PyPI is this project's")
        return 0
    print(
        f"python ci: {name} on PyPI belongs to another project ({info.get('home_page') or urls}); "
        "choose another distribution name in crates/python/pyproject.toml",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
