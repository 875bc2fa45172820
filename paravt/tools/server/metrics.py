"""A few Prometheus metrics for the tool server, rendered in the text exposition format 0.0.4.

Small on purpose (counters with labels and one histogram) so the server needs no extra package.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    body = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels
    )
    return "{" + body + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
        self.help: dict[str, str] = {}
        self.gauges: dict[str, float] = {}
        self.bucket_counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.latency_count = 0

    def inc(self, name: str, help_text: str, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self.help.setdefault(name, help_text)
            self.counters[name][key] = self.counters[name].get(key, 0.0) + amount

    def set_gauge(self, name: str, value: float) -> None:
        with self._lock:
            self.gauges[name] = value

    def observe_latency(self, seconds: float) -> None:
        with self._lock:
            self.bucket_counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
            self.latency_sum += seconds
            self.latency_count += 1

    def counter_value(self, name: str, **labels: str) -> float:
        return self.counters.get(name, {}).get(tuple(sorted(labels.items())), 0.0)

    def render(self) -> str:
        out: list[str] = []
        with self._lock:
            for name, series in sorted(self.counters.items()):
                out += [f"# HELP {name} {self.help.get(name, name)}", f"# TYPE {name} counter"]
                out += [f"{name}{_labels(k)} {v:g}" for k, v in sorted(series.items())]
            for name, value in sorted(self.gauges.items()):
                out += [f"# TYPE {name} gauge", f"{name} {value:g}"]
            h = "paravt_tool_request_latency_seconds"
            out += [f"# HELP {h} Batch request latency.", f"# TYPE {h} histogram"]
            cum = 0
            for bound, count in zip(LATENCY_BUCKETS, self.bucket_counts):
                cum += count
                out.append(f'{h}_bucket{{le="{bound:g}"}} {cum}')
            out.append(f'{h}_bucket{{le="+Inf"}} {self.latency_count}')
            out += [f"{h}_sum {self.latency_sum:.6f}", f"{h}_count {self.latency_count}"]
        return "\n".join(out) + "\n"
