"""python -m policylang.cli"""

from . import console

console()
