"""On PYTHONPATH, this makes process 1 of a job wait 1 s in os._exit: process 0, the
coordination service's host, then always leaves first (tests/test_multihost.py)."""

import os
import time

if os.environ.get("JAX_PROCESS_ID") == "1":
    _exit = os._exit

    def _slow_exit(code):
        time.sleep(1.0)
        _exit(code)

    os._exit = _slow_exit
