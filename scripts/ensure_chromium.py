"""Make sure a Chromium binary is there for the browser tests.

Playwright's own ``playwright install`` downloads a browser, which fails
offline; the tests drive the system's Chromium instead. On Debian/Ubuntu,
as root, this installs the ``chromium`` package when it is missing.
Elsewhere it says what to do, and the browser tests skip with that reason.
"""

import os
import shutil
import subprocess
import sys


def main() -> int:
    if os.environ.get("IMAGENETX_CHROMIUM") or shutil.which("chromium"):
        return 0
    apt = shutil.which("apt-get")
    if not (apt and sys.platform.startswith("linux") and os.geteuid() == 0):
        print("ensure_chromium: no chromium found; install it (Debian/Ubuntu: "
              "apt-get install -y chromium) or set IMAGENETX_CHROMIUM to run "
              "the browser tests")
        return 0
    print("ensure_chromium: installing chromium with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = [apt, "install", "-y", "-q", "chromium"]
    if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode:
        subprocess.run([apt, "update", "-q"], env=env, stdout=subprocess.DEVNULL)
        if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode:
            print("ensure_chromium: apt-get install chromium failed",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
