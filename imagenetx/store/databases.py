"""Every FiftyOne database on this install's database server, read together.

FiftyOne keeps one database per ``FIFTYONE_DATABASE_NAME`` on its server
(a team's database beside a user's own), but all of them share the
dataset folder of the machine: a file under it may belong to a dataset of
any of them. :func:`datasets_using` asks each database's datasets whether
a sample names a file under some folders; :func:`server_identity` says
which server this is, so that a folder used from another server (one this
process cannot read) is known as such.

The databases are read with the driver FiftyOne connects with
(``get_db_client``), as raw documents: FiftyOne's own API opens the
current database only.
"""

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import fiftyone as fo
import fiftyone.core.odm as foo
from pymongo.errors import PyMongoError

from imagenetx.store.service import _redact

#: databases of the server that are not FiftyOne's
_SYSTEM = ("admin", "config", "local")


@dataclass
class FolderUse:
    """Which datasets name files under some folders, on this server.

    Attributes:
        used: folder -> ``name`` (this database) or ``name (database DB)``
        unreadable: why some databases could not be read (empty: all were)
    """

    used: Dict[str, List[str]]
    unreadable: List[str] = field(default_factory=list)


def _client():
    return foo.get_db_client()


def server_identity() -> Dict[str, str]:
    """``{"id": ..., "label": ...}`` of the database server this process
    uses: its host and data folder as the server reports them (one server
    reached by two addresses is one server), else the address configured;
    the label is what a message shows (no credentials)."""
    uri = fo.config.database_uri
    label = (_redact(uri) if uri else
             f"FiftyOne's own database ({fo.config.database_dir})")
    try:
        admin = _client().admin
        path = os.path.abspath(admin.command("getCmdLineOpts")["parsed"]["storage"]["dbPath"])
        host = admin.command("hostInfo")["system"]["hostname"]
    except (PyMongoError, KeyError):  # a server that does not say (no rights)
        return {"id": label, "label": label}
    if uri:  # an address may change (a service's port): its data folder does not
        label = f"{label} (data folder {host}:{path})"
    return {"id": f"{host}:{path}", "label": label}


def datasets_using(folders: Sequence[str], within: Optional[str] = None) -> FolderUse:
    """For each folder, the datasets of every database on this server with a
    sample whose ``filepath`` (or another of the App's media fields) lies
    under it.

    Args:
        folders: the folders
        within (None): a folder that holds all of ``folders``: datasets
            with no file under it are passed over in one query

    Returns:
        a :class:`FolderUse`; databases the server refuses to list or read
        are named in its ``unreadable``
    """
    use = FolderUse({f: [] for f in folders})
    if not folders:
        return use
    client = _client()
    try:
        names = client.list_database_names()
    except PyMongoError as e:
        use.unreadable.append(f"the databases of the server cannot be listed ({e})")
        names = [fo.config.database_name]
    current = fo.config.database_name
    for db_name in sorted(names, key=lambda n: (n != current, n)):
        if db_name in _SYSTEM:
            continue
        db = client[db_name]
        try:
            if "datasets" not in db.list_collection_names():
                continue  # not a FiftyOne database
            docs = list(db.datasets.find({}, {"name": 1, "sample_collection_name": 1,
                                              "app_config.media_fields": 1}))
            for doc in docs:
                if not doc.get("sample_collection_name"):
                    continue
                samples = db[doc["sample_collection_name"]]
                fields = list(dict.fromkeys(
                    ["filepath", *((doc.get("app_config") or {}).get("media_fields") or [])]))
                if within is not None and not _names_under(samples, fields, within):
                    continue
                label = doc["name"] if db_name == current else \
                    f"{doc['name']} (database {db_name})"
                for folder in folders:
                    if _names_under(samples, fields, folder):
                        use.used[folder].append(label)
        except PyMongoError as e:
            use.unreadable.append(f"database '{db_name}' cannot be read ({e})")
    return use


def _names_under(samples, fields: List[str], folder: str) -> bool:
    """Whether a sample collection names a file under ``folder``: an
    anchored regex per field, which the ``filepath`` index answers."""
    prefix = {"$regex": "^" + re.escape(os.path.join(folder, ""))}
    query = {"$or": [{f: prefix} for f in fields]} if len(fields) > 1 else {fields[0]: prefix}
    return samples.find_one(query, {"_id": 1}) is not None
