"""The one rule for a web address support-ask keeps: a deployment's `base_url` (the API
path is appended to it), `articles.url_base` (an article's path is), and the address an
article states for itself (front matter `url:`, a canonical link), which a citation
shows as it is.

Such a URL is one printable line, http or https, with a host name and a usable port, and
no user name or password (it would be printed, logged and cached). One that something is
appended to has no query or fragment either (what is appended would land inside them).
A problem is said without echoing the URL whole: at most its scheme and host.
"""

from __future__ import annotations

import re

from gateway.secrets.shapes import has_userinfo


def url_problem(
    url: str, *, name: str, appended: str | None, example: str, userinfo: str
) -> str | None:
    """What keeps `url` from being `name` (e.g. "a base_url"), `appended` being what is
    joined to it (None: nothing, a page's own address); `userinfo` the fix for a user
    name or password in it."""
    from urllib.parse import urlsplit

    example = f"e.g. {example}"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return f"a URL holds no spaces or control characters; write it on one line, {example}"
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket
        return f"not a valid URL; {example}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"expected an http:// or https:// URL, {example}"
    if has_userinfo(parts.netloc):
        return f"holds a user name or password (user:secret@host); {userinfo}"
    if appended is not None:  # a page's own address may hold a query or a fragment
        if parts.query or url.endswith("?"):
            return (
                f"{name} takes no query (?...): {appended} is appended to it; remove the "
                f"query, {example}"
            )
        if parts.fragment or url.endswith("#"):
            return f"{name} takes no fragment (#...): remove it, {example}"
    shown = f"{parts.scheme}://{parts.netloc}"
    if not parts.hostname:
        return f"no host in {shown!r}; {example}"
    host = parts.hostname
    if not re.match(r"[\w.-]+\Z", host) and ":" not in host:  # ":" for IPv6
        return f"{host!r} is not a host name; {example}"
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        return f"the port in {shown!r} is not a number from 1 to 65535; {example}"
    return None
