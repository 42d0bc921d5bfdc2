"""Ask AI: the service's own overhead per call at 1, 10 and 50 concurrent clients.

Overhead = end-to-end latency through the API, the queue, the worker and litellm, minus the fake
provider's own time (measured inside the fake server), at the same percentile.
"""

import asyncio
import time
from collections import Counter

import httpx

from bench.common import machine, new_tenant, pct, stack, write_section

BODY = {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey, ship it today please"}


async def _timed(n: int, concurrency: int, call) -> list[float]:
    latencies: list[float] = []
    queue = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)

    async def client_loop():
        while not queue.empty():
            queue.get_nowait()
            started = time.perf_counter()
            await call()
            latencies.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(client_loop() for _ in range(concurrency)))
    return latencies


async def _run(base: str, headers: dict, concurrency: int, n: int, failures: Counter) -> list[float]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as api:

        async def via_api():
            response = await api.post("/v2/rewriter/ask-ai", json={"data": BODY}, headers=headers)
            if response.status_code != 200:
                failures[response.json()["error"]["status"]] += 1

        await _timed(min(20, n), concurrency, via_api)  # warm up: imports, pools, prepared statements
        return await _timed(n, concurrency, via_api)


def main() -> str:
    rows = []
    with stack() as (base, fake_root):
        with httpx.Client(base_url=base, timeout=30) as client:
            headers = new_tenant(client)
            client.post("/v2/workspace/apikeyconfig/update",
                        json={"data": {"aiModelApiKey": [{"provider": "openai",
                                                          "customerApiKey": "sk-bench-0000"}]}}, headers=headers)
        for concurrency, n in ((1, 200), (10, 400), (50, 500)):
            httpx.get(f"{fake_root}/_stats")
            failures: Counter = Counter()
            e2e = asyncio.run(_run(base, headers, concurrency, n, failures))
            direct = httpx.get(f"{fake_root}/_stats").json()["durations_ms"][-n:]
            rows.append((concurrency, n, pct(e2e, 50), pct(e2e, 99), pct(direct,
                                                                         50), pct(direct,
                                                                                  99), pct(e2e, 50) - pct(direct, 50),
                         pct(e2e, 99) - pct(direct, 99), n / (sum(e2e) / 1000 / concurrency),
                         ", ".join(f"{k} {v}" for k, v in failures.items()) or "none"))
    lines = [
        "## Ask AI overhead", "",
        f"Machine: {machine()}. API, one worker and a fake OpenAI server as separate processes on loopback; "
        "overhead = end-to-end minus the fake provider's own time at the same percentile.", "",
        "| clients | calls | e2e p50 ms | e2e p99 ms | provider p50 ms | provider p99 ms"
        " | overhead p50 ms | overhead p99 ms | calls/s | failures |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    ]
    for row in rows:
        lines.append("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {} |".format(*row))
    table = "\n".join(lines)
    write_section("ask-ai", table)
    return table


if __name__ == "__main__":
    print(main())
