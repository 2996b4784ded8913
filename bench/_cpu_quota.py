"""A CPU quota for one process, so that servers sharing this machine's cores behave as if
each had a small machine of its own (bench/scale.py --cpu-quota).

Linux cgroups' cpu controller (v1 at /sys/fs/cgroup/cpu, or v2 with ``cpu`` enabled);
needs root. The period is 10 ms, so a process that spends its quota waits at most the
rest of a 10 ms period, not of the default 100 ms.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PERIOD_US = 10_000
V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")


class QuotaError(RuntimeError):
    pass


def quota_root() -> tuple[Path, bool]:
    """Where to make groups, and whether it is cgroup v2."""
    if (V1 / "cpu.cfs_quota_us").exists():
        return V1, False
    controllers = V2 / "cgroup.subtree_control"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return V2, True
    raise QuotaError("no writable cgroup cpu controller here (needs root and cgroups)")


class CpuQuota:
    """``cpus`` CPUs' worth of time every period for the process ``pid`` (and its threads)."""

    def __init__(self, pid: int, cpus: float) -> None:
        root, v2 = quota_root()
        self.group = root / f"partwire-bench-{os.getpid()}-{pid}"
        quota = max(1000, int(cpus * PERIOD_US))
        try:
            self.group.mkdir()
            if v2:
                (self.group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            else:
                (self.group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (self.group / "cpu.cfs_quota_us").write_text(str(quota))
            (self.group / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            self.remove()
            raise QuotaError(f"could not set a CPU quota ({exc})") from None

    def remove(self) -> None:
        """Once the process has exited (a group with a process in it cannot go)."""
        with contextlib.suppress(OSError):
            self.group.rmdir()
