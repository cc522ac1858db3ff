"""``python -m fgdopt.hetero download | verify``: Gavel's throughput table (:mod:`fgdopt.hetero.throughputs`)."""

import sys

from fgdopt.hetero.throughputs import main

if __name__ == "__main__":        # not when documentation tools import the module
    sys.exit(main())
