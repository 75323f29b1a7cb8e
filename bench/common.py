"""What every benchmark shares: the result line, a steady-state timer and a process's peak
memory."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Result:
    name: str
    figure: float
    baseline: float
    unit: str

    @property
    def ratio(self) -> float:
        return self.figure / self.baseline if self.baseline else float("nan")

    def line(self) -> str:
        return (
            f"{self.name:<60} {self.figure:>10.1f} {self.unit:<3} {self.baseline:>10.1f} {self.unit:<3}"
            f" {self.ratio:>8.3f}"
        )


def rate(operation: Callable[[], object], *, seconds: float = 2.0, warmup: int = 50) -> float:
    """Operations per second of `operation`, after a warm-up, over about `seconds`."""
    for _ in range(warmup):
        operation()
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        operation()
        count += 1
    return count / (time.perf_counter() - started)


def quick() -> bool:
    """BENCH_QUICK=1 (`make bench QUICK=1`): shorter runs, for a first look; the figures of
    docs/performance.md come from a full run."""
    return os.environ.get("BENCH_QUICK", "") not in ("", "0")


def memory_mib(field: str = "VmRSS", pid: int | str = "self") -> float:
    """A memory figure of /proc/<pid>/status in MiB: VmRSS (resident now) or VmHWM (the
    peak, which starts again at exec)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB (VmHWM). Not getrusage's ru_maxrss: Linux
    carries that over exec, so a child started from a bench process that had grown to 500
    MiB reported 500 MiB whatever it did (every memory row of a whole `make bench` run said
    the same)."""
    return memory_mib("VmHWM")
