"""`python -m coroner ...`: runs the installed binary with the same arguments."""

import os
import subprocess
import sys

from coroner import find_coroner_bin


def main() -> None:
    binary = find_coroner_bin()
    if os.name == "posix":
        os.execv(binary, [binary, *sys.argv[1:]])
    sys.exit(subprocess.call([binary, *sys.argv[1:]]))


if __name__ == "__main__":
    main()
