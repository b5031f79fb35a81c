"""coroner: tells an ML engineer why a GPU training job died.

The package only locates the `coroner` binary installed with it; run
`coroner --help` or `python -m coroner --help`.
"""

import os
import sys
import sysconfig


def find_coroner_bin() -> str:
    """The path of the installed `coroner` binary."""
    exe = "coroner" + (sysconfig.get_config_var("EXE") or "")
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if user_scheme and user_scheme in sysconfig.get_scheme_names():
        candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe))
    # A target or prefix install (`pip install --target`): next to the package.
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "..", "..", "..", "bin", exe))
    candidates.append(os.path.join(os.path.dirname(sys.executable), exe))
    for path in candidates:
        if os.path.isfile(path):
            return os.path.normpath(path)
    raise FileNotFoundError("the coroner binary is not installed next to this package: " + ", ".join(candidates))
