"""``benchmarks/limits.py`` from its command line on small sizes: every measure runs to its
end (the loopback copies, the file writes, the cold first touch, the slave's floor and both
remoting-floor servers under a pipelined client), each printing a figure, and the files it
wrote are removed. No timing is asserted."""

import re
import subprocess
import sys
from pathlib import Path

LIMITS = Path(__file__).resolve().parents[2] / "benchmarks" / "limits.py"


def test_every_measure_runs_and_leaves_no_file(tmp_path):
    done = subprocess.run(
        [sys.executable, str(LIMITS), "--megabytes", "4", "--directory", str(tmp_path),
         "--seconds", "0.2", "--idle", "0", "--no-pin"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 13, done.stdout
    assert any(line.startswith("loopback TCP, 32 KiB writes, copied into a new file")
               for line in lines)
    floors = [line for line in lines if line.startswith("remoting floor")]
    assert len(floors) == 6 and all(re.search(r"\d+ requests/s", line) for line in floors)
    assert list(tmp_path.iterdir()) == []
