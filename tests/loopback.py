"""The loopback HTTP server the fake model servers run on: 127.0.0.1 only, a free port, one
thread a connection, for the length of a `with` block."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients at once (a benchmark's jobs) are queued, not refused


class Loopback:
    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = _Server(("127.0.0.1", 0), handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
