"""A loopback stand-in for the Hugging Face Hub, serving one folder as a
dataset repo through the routes that huggingface_hub really calls."""

import hashlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def serve_repo(port: int, repo_id: str, folder: str):
    """Serves ``folder`` as dataset repo ``repo_id``; returns the server."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            files[os.path.relpath(path, folder).replace(os.sep, "/")] = path

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, code, body=b"", headers=None):
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, obj):
            self._send(200, json.dumps(obj).encode(),
                       {"Content-Type": "application/json"})

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            path = unquote(urlparse(self.path).path)
            api = f"/api/datasets/{repo_id}"
            if path == f"{api}/revision/main" or path == api:
                return self._json({"id": repo_id, "sha": COMMIT})
            if path.startswith(f"{api}/tree/"):
                return self._json([
                    {"type": "file", "oid": hashlib.sha1(p.encode()).hexdigest(),
                     "size": os.path.getsize(f), "path": p}
                    for p, f in sorted(files.items())
                ])
            prefix = f"/datasets/{repo_id}/resolve/"
            if path.startswith(prefix):
                rel = path[len(prefix):].split("/", 1)[1]
                if rel not in files:
                    return self._send(404, b"not found",
                                      {"X-Error-Code": "EntryNotFound"})
                with open(files[rel], "rb") as f:
                    body = f.read()
                return self._send(200, body, {
                    "X-Repo-Commit": COMMIT,
                    "ETag": '"%s"' % hashlib.md5(body).hexdigest(),
                    "Content-Type": "application/octet-stream",
                })
            self._send(404, b"unknown route")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
