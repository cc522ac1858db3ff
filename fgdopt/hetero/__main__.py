"""``python -m fgdopt.hetero download | verify``: Gavel's throughput table (:mod:`fgdopt.hetero.throughputs`)."""

import sys

from fgdopt.hetero.throughputs import main

sys.exit(main())
