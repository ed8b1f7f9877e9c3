"""``python -m schedsweep``: the same command line as the ``schedsweep`` script."""
import sys

from schedsweep.pipeline.cli import main

sys.exit(main())
