"""python -m policylang.cli"""

import sys

from . import main

sys.exit(main())
