"""A loopback stand-in for the Hugging Face Hub, serving folders as dataset
repos through the routes that huggingface_hub really calls. Repos served on
the same port share one server."""

import base64
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


#: port -> (server, {repo id: {relative path: local path}})
_SERVERS = {}
#: repo id -> how it serves: ``tokens`` (a gated repo: the tokens with
#: access), ``delay`` (seconds before each file's body)
_OPTIONS = {}
_LOCK = threading.Lock()


class _Repo:
    """One served repo; ``shutdown()`` stops serving it, and stops the
    server with the last repo."""

    def __init__(self, port, repo_id):
        self.port, self.repo_id = port, repo_id

    def shutdown(self):
        with _LOCK:
            server, repos = _SERVERS[self.port]
            repos.pop(self.repo_id, None)
            if not repos:
                del _SERVERS[self.port]
                server.shutdown()
                server.server_close()


def serve_repo(port: int, repo_id: str, folder: str, tokens=None,
               delay: float = 0.0) -> _Repo:
    """Serves ``folder`` as dataset repo ``repo_id``; returns its handle.

    Args:
        tokens (None): makes the repo gated, as the Hub does: anyone lists its
            files, but a download without a token gets a 401 and one with a
            token not in ``tokens`` a 403 (``X-Error-Code: GatedRepo``)
        delay (0.0): seconds to wait before sending each file
    """
    _OPTIONS[repo_id] = {"tokens": tokens, "delay": delay}
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            files[os.path.relpath(path, folder).replace(os.sep, "/")] = path
    with _LOCK:
        if port not in _SERVERS:
            _SERVERS[port] = (_start(port), {})
        _SERVERS[port][1][repo_id] = files
    return _Repo(port, repo_id)


#: port -> (folder that new repos go in, the user whoami names)
_UPLOADS = {}


def accept_uploads(port: int, folder: str, user: str) -> None:
    """Lets the server on ``port`` take pushes as ``user``: the routes that
    ``HfApi.whoami``, ``create_repo`` and ``create_commit`` (``upload_file``,
    ``upload_folder``) call, files sent inline ("regular" upload mode, no
    LFS). A created repo is written under ``folder`` and served at once."""
    _UPLOADS[port] = (folder, user)
    with _LOCK:
        if port not in _SERVERS:
            _SERVERS[port] = (_start(port), {})


def _start(port: int) -> ThreadingHTTPServer:
    repos = lambda: _SERVERS[port][1]  # noqa: E731

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

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_POST(self):
            path = unquote(urlparse(self.path).path)
            body = self._body()
            folder, user = _UPLOADS.get(port, (None, None))
            if folder is None:
                return self._send(404, b"unknown route")
            if path == "/api/validate-yaml":
                return self._json({"errors": [], "warnings": []})
            if path == "/api/repos/create":
                spec = json.loads(body)
                repo_id = f"{spec.get('organization') or user}/{spec['name']}"
                if repo_id in repos():
                    return self._send(409, b"exists", {"X-Error-Message": "already created"})
                os.makedirs(os.path.join(folder, repo_id), exist_ok=True)
                repos()[repo_id] = {}
                return self._json({"url": f"http://127.0.0.1:{port}/datasets/{repo_id}"})
            for repo_id, files in list(repos().items()):
                api = f"/api/datasets/{repo_id}"
                if path.startswith(f"{api}/paths-info/"):
                    from urllib.parse import parse_qs

                    asked = parse_qs(body.decode()).get("paths", [])
                    return self._json([
                        {"type": "file", "path": p, "size": os.path.getsize(files[p]),
                         "oid": hashlib.sha1(p.encode()).hexdigest()}
                        for p in asked if p in files])
                if path.startswith(f"{api}/preupload/"):
                    spec = json.loads(body)
                    return self._json({"files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                        for f in spec["files"]]})
                if path.startswith(f"{api}/commit/"):
                    for line in body.splitlines():
                        item = json.loads(line)
                        if item["key"] != "file":
                            continue
                        rel = item["value"]["path"]
                        local = os.path.join(folder, repo_id, rel)
                        os.makedirs(os.path.dirname(local), exist_ok=True)
                        with open(local, "wb") as f:
                            f.write(base64.b64decode(item["value"]["content"]))
                        files[rel] = local
                    return self._json({
                        "commitUrl": f"http://127.0.0.1:{port}/datasets/{repo_id}/commit/{COMMIT}",
                        "commitOid": COMMIT, "pullRequestUrl": None})
            self._send(404, b"unknown route")

        def do_GET(self):
            path = unquote(urlparse(self.path).path)
            if path == "/api/whoami-v2" and port in _UPLOADS:
                return self._json({"type": "user", "name": _UPLOADS[port][1], "orgs": [],
                                   "auth": {"type": "access_token",
                                            "accessToken": {"role": "write"}}})
            for repo_id, files in list(repos().items()):
                if self._serve(path, repo_id, files):
                    return
            if path.startswith(("/api/datasets/", "/datasets/")):
                # an unknown repo, as the Hub answers it: 401 without a token
                has_token = self.headers.get("Authorization", "").startswith("Bearer ")
                return self._send(404 if has_token else 401, b"not found", {
                    "X-Error-Code": "RepoNotFound",
                    "X-Error-Message": "Repository not found"})
            self._send(404, b"unknown route")

        def _serve(self, path, repo_id, files) -> bool:
            api = f"/api/datasets/{repo_id}"
            if path == f"{api}/revision/main" or path == api:
                self._json({"id": repo_id, "sha": COMMIT})
                return True
            if path.startswith(f"{api}/tree/"):
                self._json([
                    {"type": "file", "oid": hashlib.sha1(p.encode()).hexdigest(),
                     "size": os.path.getsize(f), "path": p}
                    for p, f in sorted(files.items())
                ])
                return True
            prefix = f"/datasets/{repo_id}/resolve/"
            if not path.startswith(prefix):
                return False
            rel = path[len(prefix):].split("/", 1)[1]
            options = _OPTIONS.get(repo_id, {})
            if options.get("tokens") is not None:
                auth = self.headers.get("Authorization", "")
                token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
                if token not in options["tokens"]:
                    code = 401 if token is None else 403
                    self._send(code, b"gated", {
                        "X-Error-Code": "GatedRepo",
                        "X-Error-Message": f"Access to dataset {repo_id} is restricted",
                    })
                    return True
            if rel not in files:
                self._send(404, b"not found", {"X-Error-Code": "EntryNotFound"})
                return True
            with open(files[rel], "rb") as f:
                body = f.read()
            if options.get("delay") and self.command == "GET":
                time.sleep(options["delay"])
            self._send(200, body, {
                "X-Repo-Commit": COMMIT,
                "ETag": '"%s"' % hashlib.md5(body).hexdigest(),
                "Content-Type": "application/octet-stream",
            })
            return True

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
