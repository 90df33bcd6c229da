"""One process of tests/runtime/test_multiprocess_failures.py's slow-peer test.

Process 1 publishes a value only after sleeping; process 0 waits for it with ``kv_get`` and
prints ``GOT <value>``. Waiting on a slow but live peer must neither fail nor hang.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from hlopipe.runtime import distributed


def main() -> int:
    delay = float(sys.argv[1])
    distributed.initialize()
    if distributed.process_index() == 1:
        time.sleep(delay)
        distributed.kv_set("slow-peer/value", "42")
    else:
        print("GOT", distributed.kv_get("slow-peer/value", 60.0, who=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
