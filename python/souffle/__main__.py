"""python3 -m souffle sweep MANIFEST [options]: the sweep's command line (souffle.sweep.main)."""

import sys

from .sweep import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "sweep":
        print("usage: python3 -m souffle sweep MANIFEST [options] (see --help)", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
