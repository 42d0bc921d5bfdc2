"""Usage counters: what recording costs on the request path (a dict update), measured in-process.

python -m bench.usage [--calls 200000]

Times the access middleware's counting of one authenticated call (`kit/http.py` `_count_call`: read the
workspace and route left in the scope, build the label, update the buffer), `usage.count` alone and
`usage.observe` (with its histogram bucket), over a buffer of realistic size (500 workspaces × 40 labels in
the current minute). Prints microseconds per call; compare with the ~700-800 µs of CPU a request costs.
"""

import argparse
import time
from types import SimpleNamespace

from bench.common import machine, write_section
from collab.kit import usage
from collab.kit.auth import Tenant
from collab.kit.http import _count_call


def _per_call_us(fn, calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - started) / calls * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    svc = SimpleNamespace(clock=time.time, usage=usage.Usage())
    for w in range(500):
        for label in range(40):
            usage.count(svc, "api_calls", workspace_id=f"ws_{w}", label=f"/v2/op{label} 200")
    app = SimpleNamespace(state=SimpleNamespace(services=svc))
    scope = {
        "type": "http", "path": "/v2/organizations/get", "root_path": "", "app": app,
        "route": SimpleNamespace(path="/organizations/get"),
        "state": {"tenant": Tenant(api_key_id="key_1", workspace_id="ws_7")}
    }
    rows = [("middleware: count one API call", _per_call_us(lambda: _count_call(scope, 200), args.calls)),
            ("usage.count", _per_call_us(lambda: usage.count(svc, "judgments_added", workspace_id="ws_7"), args.calls)),
            ("usage.observe (histogram)",
             _per_call_us(lambda: usage.observe(svc, "searches", 42.0, workspace_id="ws_7"), args.calls))]
    lines = [
        "## Usage counters (`python -m bench.usage`, issue #20)", "",
        f"Machine: {machine()}. In-process, best of 5 runs of {args.calls:,} calls, over a buffer already holding "
        "20,000 keys (500 workspaces × 40 labels).", "", "| operation | µs per call |", "|---|---:|",
        *(f"| {name} | {us:.2f} |" for name, us in rows), "",
        "Recording is a dict update on the request path (no await, no I/O): about 1 µs of the ~700-800 µs of CPU a "
        "request costs (crud section), under 0.2%. The flush (one multi-row upsert every `COLLAB_USAGE_FLUSH_S`, "
        "10 s) runs off the request path."
    ]
    table = "\n".join(lines)
    print(table)
    write_section("usage", table)


if __name__ == "__main__":
    main()
