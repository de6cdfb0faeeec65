"""Process-relative start timestamp for the "started in N ms" log line (posting's
``_start_time.py``). ``whenpro_core.cli`` passes its own earlier timestamp when it can."""

import time

START_TIME_NS = time.perf_counter_ns()
