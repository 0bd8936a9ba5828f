"""A loopback stand-in for the Hugging Face Hub, serving folders as dataset
repos through the routes that huggingface_hub really calls. Repos served on
the same port share one server.

As on the Hub, a repo's commit sha follows its files: it is a hash of every
path and its bytes, so changing a file in a served folder makes a new
revision; a file's ETag and tree oid are the hash of its bytes. The folder
is read again on every request. Older revisions stay servable for repos
served with ``history=True`` (their bytes are kept in memory).
"""

import base64
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse


#: port -> (server, {repo id: folder})
_SERVERS = {}
#: repo id -> how it serves: ``tokens`` (a gated repo: the tokens with
#: access), ``delay`` (seconds before each file's body), ``history``
_OPTIONS = {}
#: repo id -> {commit: {path: (oid, size, local path)}}
_REVISIONS = {}
#: oid -> bytes, for the files of repos served with history
_BLOBS = {}
#: (local path, inode, size, mtime, ctime) -> oid
_OIDS = {}
_LOCK = threading.Lock()


def _oid(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _OIDS:
        with open(path, "rb") as f:
            _OIDS[key] = hashlib.sha1(f.read()).hexdigest()
    return _OIDS[key]


#: repo id -> its last scanned ``(commit, files)``
_LATEST = {}


def _unchanged(entry) -> bool:
    """Whether a scanned file is still the same file (its stat key)."""
    try:
        st = os.stat(entry[2])
    except FileNotFoundError:
        return False
    return (entry[2], st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) in _OIDS


def repo_state(repo_id: str, folder: str):
    """``(commit, {path: (oid, size, local path)})`` of a folder now."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            local = os.path.join(root, name)
            rel = os.path.relpath(local, folder).replace(os.sep, "/")
            files[rel] = (_oid(local), os.path.getsize(local), local)
    commit = hashlib.sha1("\n".join(
        f"{p} {files[p][0]}" for p in sorted(files)).encode()).hexdigest()
    with _LOCK:
        _LATEST[repo_id] = (commit, files)
        known = _REVISIONS.setdefault(repo_id, {})
        if commit not in known:
            known[commit] = files
            if _OPTIONS.get(repo_id, {}).get("history"):
                for oid, _, local in files.values():
                    if oid not in _BLOBS:
                        with open(local, "rb") as f:
                            _BLOBS[oid] = f.read()
    return commit, files


def _file_bytes(entry):
    """The bytes of a revision's file: from disk while unchanged, else kept."""
    oid, _, local = entry
    try:
        if _oid(local) == oid:
            with open(local, "rb") as f:
                return f.read()
    except FileNotFoundError:
        pass
    return _BLOBS.get(oid)


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
               delay: float = 0.0, history: bool = False) -> _Repo:
    """Serves ``folder`` as dataset repo ``repo_id``; returns its handle.

    Args:
        tokens (None): makes the repo gated, as the Hub does: anyone lists its
            files, but a download without a token gets a 401 and one with a
            token not in ``tokens`` a 403 (``X-Error-Code: GatedRepo``)
        delay (0.0): seconds to wait before sending each file
        history (False): keep every revision's bytes, so a revision pinned
            before the folder changed can still be downloaded
    """
    _OPTIONS[repo_id] = {"tokens": tokens, "delay": delay, "history": history}
    with _LOCK:
        if port not in _SERVERS:
            _SERVERS[port] = (_start(port), {})
        _SERVERS[port][1][repo_id] = folder
    repo_state(repo_id, folder)  # the first revision
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
                repos()[repo_id] = os.path.join(folder, repo_id)
                return self._json({"url": f"http://127.0.0.1:{port}/datasets/{repo_id}"})
            for repo_id, repo_folder in list(repos().items()):
                api = f"/api/datasets/{repo_id}"
                if path.startswith(f"{api}/paths-info/"):
                    _, files = repo_state(repo_id, repo_folder)
                    asked = parse_qs(body.decode()).get("paths", [])
                    return self._json([
                        {"type": "file", "path": p, "size": files[p][1], "oid": files[p][0]}
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
                        local = os.path.join(repo_folder, rel)
                        os.makedirs(os.path.dirname(local), exist_ok=True)
                        with open(local, "wb") as f:
                            f.write(base64.b64decode(item["value"]["content"]))
                    commit, _ = repo_state(repo_id, repo_folder)
                    return self._json({
                        "commitUrl": f"http://127.0.0.1:{port}/datasets/{repo_id}/commit/{commit}",
                        "commitOid": commit, "pullRequestUrl": None})
            self._send(404, b"unknown route")

        def do_GET(self):
            path = unquote(urlparse(self.path).path)
            if path == "/api/whoami-v2" and port in _UPLOADS:
                return self._json({"type": "user", "name": _UPLOADS[port][1], "orgs": [],
                                   "auth": {"type": "access_token",
                                            "accessToken": {"role": "write"}}})
            for repo_id, repo_folder in list(repos().items()):
                if self._serve(path, repo_id, repo_folder):
                    return
            if path.startswith(("/api/datasets/", "/datasets/")):
                # an unknown repo, as the Hub answers it: 401 without a token
                has_token = self.headers.get("Authorization", "").startswith("Bearer ")
                return self._send(404 if has_token else 401, b"not found", {
                    "X-Error-Code": "RepoNotFound",
                    "X-Error-Message": "Repository not found"})
            self._send(404, b"unknown route")

        def _revision(self, repo_id, folder, revision, rel=None):
            """``(commit, files)`` of a revision ("main" or a commit), or
            None after answering 404. The folder is scanned again for every
            API call; a file request scans it only when that file changed
            or is new since the last scan (thousands of media requests)."""
            latest = _LATEST.get(repo_id)
            if rel is None or latest is None or (
                    revision in ("main", latest[0])
                    and not (rel in latest[1] and _unchanged(latest[1][rel]))):
                latest = repo_state(repo_id, folder)
            commit, files = latest
            if revision not in ("main", commit):
                commit, files = revision, _REVISIONS.get(repo_id, {}).get(revision)
            if files is None:
                self._send(404, b"revision not found", {
                    "X-Error-Code": "RevisionNotFound",
                    "X-Error-Message": f"Invalid rev id: {revision}"})
                return None
            return commit, files

        def _serve(self, path, repo_id, folder) -> bool:
            api = f"/api/datasets/{repo_id}"
            if path == api or path.startswith(f"{api}/revision/"):
                found = self._revision(repo_id, folder, path[len(f"{api}/revision/"):]
                                       if path != api else "main")
                if found:
                    commit, files = found
                    self._json({"id": repo_id, "sha": commit, "siblings": [
                        {"rfilename": p, "size": size, "blobId": oid}
                        for p, (oid, size, _) in sorted(files.items())]})
                return True
            if path.startswith(f"{api}/tree/"):
                found = self._revision(repo_id, folder,
                                       path[len(f"{api}/tree/"):].split("/", 1)[0])
                if found:
                    self._json([{"type": "file", "oid": oid, "size": size, "path": p}
                                for p, (oid, size, _) in sorted(found[1].items())])
                return True
            prefix = f"/datasets/{repo_id}/resolve/"
            if not path.startswith(prefix):
                return False
            revision, _, rel = path[len(prefix):].partition("/")
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
            found = self._revision(repo_id, folder, revision, rel)
            if not found:
                return True
            commit, files = found
            body = _file_bytes(files[rel]) if rel in files else None
            if body is None:
                self._send(404, b"not found", {"X-Error-Code": "EntryNotFound"})
                return True
            if options.get("delay") and self.command == "GET":
                time.sleep(options["delay"])
            self._send(200, body, {
                "X-Repo-Commit": commit,
                "ETag": '"%s"' % files[rel][0],
                "Content-Type": "application/octet-stream",
            })
            return True

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
