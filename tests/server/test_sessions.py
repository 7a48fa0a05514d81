"""The UI's login is a session (issue 32): the cookie holds a random id, never the key; logging out revokes it
(the old cookie then opens nothing); sessions expire; the cookie is Secure over TLS; ``?api_key=`` makes a
session and drops the key from the address."""

from __future__ import annotations

import re

from .conftest import ACME, ADMIN, auth


def _login_form(client, key=ADMIN, next_="/"):
    client.cookies.clear()
    token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', client.get("/login").text).group(1)
    return client.post("/login", data={"key": key, "next": next_, "csrf_token": token}, follow_redirects=False)


def test_the_cookie_holds_a_session_id_not_the_key(served):
    r = _login_form(served)
    cookie = r.headers["set-cookie"]
    assert r.status_code == 303 and cookie.startswith("ragclinic_session=") and ADMIN not in cookie
    assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower() and "secure" not in cookie.lower()
    sid = served.cookies.get("ragclinic_session")
    assert sid and len(sid) >= 40 and ADMIN not in sid
    assert served.get("/traces").status_code == 200
    served.cookies.clear()
    served.cookies.set("ragclinic_key", ADMIN)  # what the cookie used to hold: not a login any more
    assert served.get("/v1/traces").status_code == 401
    assert served.get("/traces", follow_redirects=False).headers["location"].startswith("/login")


def test_api_key_in_the_address_makes_a_session_and_leaves_the_address(served):
    served.cookies.clear()
    r = served.get(f"/traces?api_key={ACME}&x=1", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/traces?x=1"
    assert ACME not in r.headers["set-cookie"] and "ragclinic_session=" in r.headers["set-cookie"]
    assert "tenant acme" in served.get("/traces").text
    assert served.get("/v1/traces").status_code == 200  # the API takes the session for reading too


def test_logging_out_revokes_the_session(served):
    from fastapi.testclient import TestClient

    _login_form(served)
    old = served.cookies.get("ragclinic_session")
    page = served.get("/").text
    token = re.search(r'name="csrf_token"\s+value="([0-9a-f]+)"', page).group(1)
    assert served.get("/logout").status_code == 405  # a GET (an <img> on any page) cannot log anyone out
    assert served.post("/logout", data={}).status_code == 403  # nor a form without the page's token
    r = served.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    again = TestClient(served.app, cookies={"ragclinic_session": old})  # the old cookie, kept by someone
    assert again.get("/", follow_redirects=False).headers["location"].startswith("/login")
    assert again.get("/v1/traces").status_code == 401


def test_a_new_login_replaces_the_browsers_old_session(served):
    _login_form(served)
    first = served.cookies.get("ragclinic_session")
    page = served.get("/login").text
    token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', page).group(1)
    served.post("/login", data={"key": ACME, "next": "/", "csrf_token": token}, follow_redirects=False)
    assert served.cookies.get("ragclinic_session") != first
    assert served.app.state.rc.sessions.get(first) is None


def test_the_cookie_is_secure_over_tls(served):
    from fastapi.testclient import TestClient

    tls = TestClient(served.app, base_url="https://127.0.0.1")
    r = tls.get(f"/?api_key={ADMIN}", follow_redirects=False)
    assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()


def test_sessions_expire_and_are_bounded():
    from ragclinic.server import sessions as s
    from ragclinic.server.auth import Principal

    now = [0.0]
    store = s.Sessions(3600, clock=lambda: now[0])
    sid = store.create(Principal("acme", "abcd1234"))
    assert store.get(sid) == Principal("acme", "abcd1234") and store.get("nope") is None and store.get("") is None
    now[0] = 3599
    assert store.get(sid) is not None
    now[0] = 3600
    assert store.get(sid) is None  # expired: gone
    ids = [store.create(Principal("", f"{i:08x}")) for i in range(s.MAX_SESSIONS + 5)]  # as many keys
    assert store.get(ids[0]) is None and store.get(ids[-1]) is not None and len(store._by_digest) == s.MAX_SESSIONS


def test_a_bearer_key_still_works_without_any_cookie(served):
    served.cookies.clear()
    assert served.get("/v1/traces", headers=auth(ADMIN)).status_code == 200


def test_a_cross_site_link_with_a_key_does_not_log_the_browser_in(served):
    """Login CSRF: a page on another site that navigates here with the attacker's key would log the victim's
    browser into the attacker's tenant; it gets the login form instead, no session and no cookie."""
    store = served.app.state.rc.sessions
    for headers in ({"Sec-Fetch-Site": "cross-site", "Referer": "http://evil.example/"},
                    {"Sec-Fetch-Site": "same-site"}, {"Referer": "http://evil.example/page"}):
        served.cookies.clear()
        before = len(store._by_digest)
        r = served.get(f"/traces?api_key={ACME}", headers=headers, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/login?"), headers
        assert "ragclinic_session" not in r.headers.get("set-cookie", "") and ACME not in r.headers["location"]
        assert len(store._by_digest) == before and served.cookies.get("ragclinic_session") is None
    for headers in ({"Sec-Fetch-Site": "none"}, {"Sec-Fetch-Site": "same-origin"}, {}):  # typed or pasted
        served.cookies.clear()
        r = served.get(f"/traces?api_key={ACME}", headers=headers, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/traces" and "ragclinic_session=" in r.headers[
            "set-cookie"], headers


def test_one_key_cannot_push_out_the_sessions_of_others():
    from ragclinic.server import sessions as s
    from ragclinic.server.auth import Principal

    store = s.Sessions(3600)
    theirs = store.create(Principal("globex", "0000beef"))
    flood = [store.create(Principal("acme", "abcd1234")) for _ in range(s.MAX_SESSIONS + 5)]
    assert store.get(theirs) == Principal("globex", "0000beef")  # another key's login survives the flood
    assert len(store._by_digest) == s.MAX_SESSIONS_PER_KEY + 1
    assert store.get(flood[0]) is None and store.get(flood[-1]) is not None  # that key's oldest go first
    assert all(store.get(sid) is not None for sid in flood[-s.MAX_SESSIONS_PER_KEY:])
