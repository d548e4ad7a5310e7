#!/usr/bin/env python3
"""An HTTP server that misbehaves on purpose, for tests/unit/fetch.

Listens on 127.0.0.1 (an ephemeral port unless --port), prints "PORT <n>" once
ready. Every body is Body(SIZE) (bytes (i * 7 + 3) % 251), which the test
computes too. Routes, all under /w/ except /outside/:
  /w/ok                  200, the body (keep-alive)
  /w/404                 404
  /w/500                 500, always
  /w/flaky?k=NAME&n=N    500 for the first N requests with that NAME, then ok
  /w/truncated           Content-Length SIZE, half the body, then close
  /w/slow                Content-Length SIZE, a few bytes per second
  /w/other               200, a different body of the same size
  /w/wrong-length        Content-Length SIZE + 10 with as many bytes
  /w/longer              no Content-Length, SIZE + 10 bytes, then close
  /w/redirect-ok         302 to /w/ok
  /w/redirect-off        302 to /outside/ok (served, but not allowed)
  /w/redirect-metadata   302 to http://169.254.169.254/latest/meta-data/
  /w/redirect-loop       302 to itself
  /outside/ok            200, the body
  /count                 how many requests reached /outside/ (8 digits)
  /connections           how many connections were accepted so far (8 digits)
"""
import argparse
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIZE = 256 * 1024
BODY = bytes((i * 7 + 3) % 251 for i in range(SIZE))
OTHER = bytes((i * 7 + 4) % 251 for i in range(SIZE))
LOCK = threading.Lock()
FLAKY = {}
OUTSIDE = [0]
CONNECTIONS = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        with LOCK:
            CONNECTIONS[0] += 1
        super().setup()

    def send_body(self, status, body, length=None, close=False):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if length is not None:
            self.send_header("Content-Length", str(length))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        path = url.path
        try:
            if path == "/w/ok":
                self.send_body(200, BODY, SIZE)
            elif path == "/w/404":
                self.send_body(404, b"not found\n", 10)
            elif path == "/w/500":
                self.send_body(500, b"boom\n", 5)
            elif path == "/w/flaky":
                key = query.get("k", [""])[0]
                failures = int(query.get("n", ["2"])[0])
                with LOCK:
                    FLAKY[key] = FLAKY.get(key, 0) + 1
                    seen = FLAKY[key]
                if seen <= failures:
                    self.send_body(500, b"boom\n", 5)
                else:
                    self.send_body(200, BODY, SIZE)
            elif path == "/w/truncated":
                self.send_response(200)
                self.send_header("Content-Length", str(SIZE))
                self.end_headers()
                self.wfile.write(BODY[: SIZE // 2])
                self.wfile.flush()
                self.close_connection = True
            elif path == "/w/slow":
                self.send_response(200)
                self.send_header("Content-Length", str(SIZE))
                self.end_headers()
                for i in range(0, SIZE, 10):
                    self.wfile.write(BODY[i : i + 10])
                    self.wfile.flush()
                    time.sleep(0.1)
            elif path == "/w/other":
                self.send_body(200, OTHER, SIZE)
            elif path == "/w/wrong-length":
                self.send_body(200, BODY + b"0123456789", SIZE + 10)
            elif path == "/w/longer":
                self.send_body(200, BODY + b"0123456789", None, close=True)
            elif path == "/w/redirect-ok":
                self.redirect("/w/ok")
            elif path == "/w/redirect-off":
                self.redirect("/outside/ok")
            elif path == "/w/redirect-metadata":
                self.redirect("http://169.254.169.254/latest/meta-data/")
            elif path == "/w/redirect-loop":
                self.redirect("/w/redirect-loop")
            elif path == "/outside/ok":
                with LOCK:
                    OUTSIDE[0] += 1
                self.send_body(200, BODY, SIZE)
            elif path == "/count":
                with LOCK:
                    text = b"%08d" % OUTSIDE[0]
                self.send_body(200, text, len(text))
            elif path == "/connections":
                with LOCK:
                    text = b"%08d" % CONNECTIONS[0]
                self.send_body(200, text, len(text))
            else:
                self.send_body(404, b"no such route\n", 14)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
