"""Endpoints that are dead or do not speak the Messages API: the run stops before it starts,
in seconds, with one line saying what answered; bad replies are errors, never cached or scored."""

import json
import socket
import time
from http.server import BaseHTTPRequestHandler

import anthropic
import httpx2
import pytest
from fakes import FakeClient
from loopback import Loopback

from harness.cli import main
from harness.models.backends import open_model
from harness.models.cache import ResponseCache
from harness.models.client import reply_problem

GOOD = {
    "id": "m",
    "type": "message",
    "role": "assistant",
    "model": "x",
    "stop_reason": "end_turn",
    "content": [{"type": "text", "text": "OK"}],
    "usage": {"input_tokens": 3, "output_tokens": 1},
}


class Endpoint(Loopback):
    """A loopback server answering every POST with one fixed response (or raw bytes)."""

    def __init__(self, status=200, content_type="application/json", body=b"", raw=None):
        endpoint = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                endpoint.requests += 1
                if raw is not None:
                    self.wfile.write(raw)
                    self.connection.close()
                    return
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BROKEN = {
    "raw bytes": dict(raw=b"\x00\x01garbage\r\n\r\n"),
    "200 html": dict(content_type="text/html", body=b"<html><body>It works!</body></html>"),
    "200 json that is not a reply": dict(body=b'{"hello": "world"}'),
    "200 error body": dict(body=b'{"type": "error", "error": {"type": "api_error", "message": "boom"}}'),
    "500": dict(status=500, body=b'{"type": "error", "error": {"type": "api_error", "message": "down"}}'),
}


def _run(eval_file, tmp_path, url):
    started = time.monotonic()
    code = main(
        ["run", str(eval_file), "--base-url", url, "--model", "m", "--results", str(tmp_path / "results"), "--quiet"]
    )
    return code, time.monotonic() - started


def test_nothing_listening_stops_the_run_in_seconds(eval_file, tmp_path, capsys):
    code, seconds = _run(eval_file, tmp_path, f"http://127.0.0.1:{_free_port()}")
    err = capsys.readouterr().err
    assert code == 1 and seconds < 10
    assert err.startswith("error: http://127.0.0.1:") and "does not answer as a Messages API" in err
    assert err.count("\n") == 1 and not (tmp_path / "results" / "runs").exists()


@pytest.mark.parametrize("kind", BROKEN)
def test_a_server_that_does_not_speak_the_messages_api_stops_the_run(kind, eval_file, tmp_path, capsys):
    with Endpoint(**BROKEN[kind]) as server:
        code, seconds = _run(eval_file, tmp_path, server.url)
    err = capsys.readouterr().err
    assert code == 1 and seconds < 10, err
    assert "does not answer as a Messages API" in err and err.count("\n") == 1
    assert server.requests == 1  # the one check, nothing else
    assert not (tmp_path / "results" / "runs").exists()  # no run folder, nothing cached


def test_bad_replies_during_a_run_are_errors_never_cached(tmp_path):
    with Endpoint(body=b'{"hello": "world"}') as server:
        backend = open_model("m", base_url=server.url)
        backend.cache = ResponseCache(tmp_path / "cache.sqlite")
        with pytest.raises(Exception, match="not a Messages reply"):
            backend.create(max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    key = backend.cache.key(
        backend.identity, backend.sampling, {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert backend.cache.get(key) is None
    # An entry stored by an older version is not replayed: the request goes to the server.
    backend.cache.put(key, {"hello": "world"})
    with Endpoint(body=json.dumps(GOOD).encode()) as server:
        backend.client = backend.client.with_options(base_url=server.url)
        reply = backend.create(max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert reply["content"][0]["text"] == "OK" and server.requests == 1


@pytest.mark.parametrize(
    "data, problem",
    [
        (GOOD, None),
        ("<html>", "not a JSON object"),
        ({"hello": "world"}, "not a Messages reply"),
        ({**GOOD, "content": "OK"}, "not a list of blocks"),
        ({**GOOD, "content": [{"type": "text"}]}, "without text"),
        ({**GOOD, "content": [{"type": "tool_use", "name": "x", "input": {}}]}, "without id"),
    ],
)
def test_what_counts_as_a_messages_reply(data, problem):
    found = reply_problem(data)
    assert (found is None) if problem is None else (problem in found)


def test_a_run_with_too_many_errors_exits_non_zero(eval_file, tmp_path, capsys, monkeypatch):
    def failing(request):
        raise anthropic.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1/v1/messages"))

    monkeypatch.setattr("harness.execution.executors.open_model", lambda *a, **k: FakeClient(failing))
    assert main(["run", str(eval_file), "--results", str(tmp_path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "of the run's observations failed with errors" in err and "100%" in err
