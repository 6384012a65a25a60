"""`python -m policylang`: the command line, as the `policylang` script runs it."""

from .cli import console

console()
