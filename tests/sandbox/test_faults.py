"""Every fault fires as configured, deterministically."""

from __future__ import annotations

import contextlib
import http.client
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from actonce.sandbox import SESSION_COOKIE, FaultRule, LostMode, SandboxServer


def requests_log(base: str) -> list[dict[str, object]]:
    data: list[dict[str, object]] = httpx.get(base + "/admin/requests").json()["requests"]
    return data


def post_count(base: str) -> int:
    return int(httpx.get(base + "/admin/ground-truth").json()["totals"]["posts"])


def test_lost_response_commits_then_drops(set_faults: Any, base: str, alice: httpx.Client) -> None:
    set_faults(base, {"action": "post.create", "fault": "lost_response", "times": 1})
    with pytest.raises(httpx.RemoteProtocolError):
        alice.post("/compose", data={"text": "lost"})
    assert post_count(base) == 1
    assert alice.post("/compose", data={"text": "next"}).status_code == 303  # times=1
    fired = [r["faults"] for r in requests_log(base) if r["action"] == "post.create"]
    assert fired == [["lost_response"], []]


def _keep_alive_submit(base: str, alice: httpx.Client, text: str) -> http.client.HTTPConnection:
    """GET the form, then POST it on the same (reused) keep-alive connection."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    cookie = f"{SESSION_COOKIE}={alice.cookies[SESSION_COOKIE]}"
    conn.request("GET", "/compose", headers={"Cookie": cookie})
    form = conn.getresponse()
    assert form.status == 200
    form.read()
    conn.request(
        "POST",
        "/compose",
        body=f"text={text}",
        headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"},
    )
    return conn


def test_lost_response_close_sends_no_byte(set_faults: Any, base: str, alice: httpx.Client) -> None:
    set_faults(base, {"action": "post.create", "fault": "lost_response", "mode": "close"})
    conn = _keep_alive_submit(base, alice, "closed")
    # http.client raises RemoteDisconnected only when not one byte of a status line came.
    with pytest.raises(http.client.RemoteDisconnected):
        conn.getresponse()
    conn.close()
    assert post_count(base) == 1
    create = [r for r in requests_log(base) if r["action"] == "post.create"]
    assert [(r["faults"], r["lost_mode"]) for r in create] == [(["lost_response"], "close")]
    assert create[0]["on_connection"] == 2  # the form's connection, reused


def test_lost_response_reset_sends_a_reset(set_faults: Any, base: str, alice: httpx.Client) -> None:
    set_faults(base, {"action": "post.create", "fault": "lost_response", "mode": "reset"})
    conn = _keep_alive_submit(base, alice, "reset")
    with pytest.raises(ConnectionResetError):
        conn.getresponse()
    conn.close()
    assert post_count(base) == 1
    assert [r["lost_mode"] for r in requests_log(base) if r["action"] == "post.create"] == ["reset"]


def test_lost_response_headers_mode_sends_headers_then_drops(
    set_faults: Any, base: str, alice: httpx.Client
) -> None:
    set_faults(base, {"action": "post.create", "fault": "lost_response", "mode": "headers"})
    conn = _keep_alive_submit(base, alice, "headers")
    answer = conn.getresponse()
    assert answer.status == 200  # the headers arrived ...
    with pytest.raises(http.client.IncompleteRead):
        answer.read()  # ... the body never does
    conn.close()
    assert post_count(base) == 1


def test_request_log_counts_requests_per_action_and_connection(
    set_faults: Any, base: str, alice: httpx.Client
) -> None:
    alice.get("/compose")
    alice.post("/compose", data={"text": "one"})
    alice.post("/compose", data={"text": "two"})
    data = httpx.get(base + "/admin/requests").json()
    assert data["counts"] == {"login": 1, "view.compose": 1, "post.create": 2}
    mine = [(r["connection"], r["on_connection"]) for r in data["requests"]]
    assert len({c for c, _ in mine}) == 1  # httpx keeps one connection alive
    assert [n for _, n in mine] == list(range(1, len(mine) + 1))


def test_lost_mode_is_validated() -> None:
    assert (
        FaultRule.from_json(
            {"action": "post.create", "fault": "lost_response", "mode": "reset"}
        ).mode
        is LostMode.RESET
    )
    assert FaultRule("post.create", "lost_response").to_json()["mode"] == "headers"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode must be one of"):
        FaultRule.from_json({"action": "post.create", "fault": "lost_response", "mode": "fin"})
    with pytest.raises(ValueError, match="lost_response only"):
        FaultRule.from_json({"action": "post.create", "fault": "captcha", "mode": "close"})


def test_double_submit_page_submits_twice_by_script(
    set_faults: Any, base: str, alice: httpx.Client
) -> None:
    set_faults(base, {"action": "view.compose", "fault": "double_submit", "times": 1})
    page = alice.get("/compose").text
    assert "double_submit fault" in page and page.count("method: 'POST'") == 2
    assert "double_submit fault" not in alice.get("/compose").text  # times=1


def test_slow_response_commits_then_waits(set_faults: Any, base: str, alice: httpx.Client) -> None:
    set_faults(base, {"action": "invoice.create", "fault": "slow_response", "seconds": 5})
    with pytest.raises(httpx.ReadTimeout):
        alice.post("/invoices", data={"reference": "SLOW", "amount": "1"}, timeout=0.5)
    assert httpx.get(base + "/admin/ground-truth").json()["totals"]["invoices"] == 1


def test_slow_response_is_cancelled_on_shutdown() -> None:
    rule = FaultRule(action="view.home", fault="slow_response", seconds=30)  # type: ignore[arg-type]
    srv = SandboxServer(faults=[rule]).start()
    with httpx.Client(base_url=srv.url) as c:
        import threading

        done = threading.Event()

        def hit() -> None:
            with contextlib.suppress(httpx.HTTPError):
                c.get("/", timeout=40)
            done.set()

        worker = threading.Thread(target=hit)
        worker.start()
        while not requests_log(srv.url):
            pass  # the request is in; the server is holding it
        started = time.monotonic()
        srv.stop()
        assert done.wait(10)
        worker.join()
        assert time.monotonic() - started < 10


def test_late_index_hides_from_lists_not_from_own_url(
    set_faults: Any, base: str, alice: httpx.Client
) -> None:
    set_faults(
        base,
        {"action": "post.create", "fault": "late_index", "seconds": 30, "match": {"text": "late"}},
    )
    url = alice.post("/compose", data={"text": "late one"}).headers["location"]
    alice.post("/compose", data={"text": "on time"})
    assert alice.get(url).status_code == 200
    found = alice.get("/search", params={"author": "alice"}).text
    assert "late one" not in found and "on time" in found
    assert "late one" not in alice.get("/u/alice").text
    assert post_count(base) == 2


def test_errors_before_and_after_commit(set_faults: Any, base: str, alice: httpx.Client) -> None:
    set_faults(
        base,
        {"action": "invoice.create", "fault": "error_before_commit", "times": 1},
        {
            "action": "invoice.create",
            "fault": "error_after_commit",
            "times": 1,
            "match": {"reference": "AFTER"},
        },
    )
    assert alice.post("/invoices", data={"reference": "BEFORE", "amount": "1"}).status_code == 500
    assert alice.post("/invoices", data={"reference": "AFTER", "amount": "1"}).status_code == 500
    gt = httpx.get(base + "/admin/ground-truth").json()
    assert [g["key"]["reference"] for g in gt["invoices"]] == ["AFTER"]


@pytest.mark.parametrize(
    ("fault", "status", "marker"),
    [
        ("session_expired", 401, 'data-testid="login-form"'),
        ("captcha", 200, 'data-testid="captcha"'),
        ("rate_limit", 429, 'data-testid="rate-limit"'),
    ],
)
def test_blocking_screens(
    set_faults: Any, base: str, alice: httpx.Client, fault: str, status: int, marker: str
) -> None:
    set_faults(
        base,
        {"action": "view.compose", "fault": fault, "times": 1},
        {"action": "post.create", "fault": fault, "times": 1},
    )
    page = alice.get("/compose")
    assert page.status_code == status and marker in page.text
    assert alice.post("/compose", data={"text": "blocked"}).status_code == status
    assert post_count(base) == 0
    if fault == "session_expired":
        assert alice.get("/compose").status_code == 303  # the session is really gone


def test_editor_append_prefills_the_draft(set_faults: Any, base: str, alice: httpx.Client) -> None:
    set_faults(base, {"action": "view.compose", "fault": "editor_append", "draft": "OLD "})
    page = alice.get("/compose").text
    assert 'data-draft="OLD "' in page and ">OLD </textarea>" in page


def test_rate_is_deterministic_for_a_seed(set_faults: Any, base: str, alice: httpx.Client) -> None:
    def run() -> list[bool]:
        httpx.post(base + "/admin/reset").raise_for_status()
        set_faults(
            base, {"action": "view.search", "fault": "error_before_commit", "rate": 0.5}, seed=42
        )
        return [alice.get("/search").status_code == 500 for _ in range(20)]

    first, second = run(), run()
    assert first == second
    assert 3 < sum(first) < 17


def test_fault_config_is_validated_and_listed(set_faults: Any, base: str) -> None:
    bad = httpx.post(base + "/admin/faults", json={"rules": [{"action": "x", "fault": "nope"}]})
    assert bad.status_code == 422
    rule = {"action": "x", "fault": "lost_response", "mode": "half"}
    assert httpx.post(base + "/admin/faults", json={"rules": [rule]}).status_code == 422
    set_faults(base, {"action": "view.*", "fault": "captcha", "times": 2})
    rules = httpx.get(base + "/admin/faults").json()["rules"]
    assert rules[0]["fault"] == "captcha" and rules[0]["times"] == 2 and rules[0]["fired"] == 0


def test_faults_from_python(server: SandboxServer, base: str, alice: httpx.Client) -> None:
    server.sandbox.faults.configure([FaultRule("like.toggle", "error_before_commit")])  # type: ignore[arg-type]
    post = alice.post("/compose", data={"text": "p"}).headers["location"]
    assert alice.post(post + "/like").status_code == 500
