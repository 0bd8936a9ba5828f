import sys

from imagenetx.cli import main

sys.exit(main())
