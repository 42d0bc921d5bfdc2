"""A fresh process's first call to each provider works with no network beyond 127.0.0.1."""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import asyncio, json, socket, sys

    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (host.startswith("127.") or host == "localhost" or host.startswith("/")):
            raise OSError(f"network blocked in test: {address}")
        return real_connect(self, address)

    socket.socket.connect = guarded
    from collab.llm.client import complete, messages_for
    from collab.llm.routing import resolve

    bases = json.loads(sys.argv[1])
    out = {}

    async def main():
        for model, provider in [
            ("claude-sonnet-4-0", "anthropic"), ("gemini-2.5-flash", "gemini"), ("gpt-4o", "openai")
        ]:
            route = resolve(model)
            completion = await complete(route, messages=messages_for(route, system="s", user="u"),
                                        api_key="k-12345678", api_base=bases[provider], timeout_s=20, attempts=1)
            out[provider] = completion.text

    asyncio.run(main())
    print(json.dumps(out))
    """)


def test_first_call_per_provider_in_a_fresh_process(llm):
    bases = {p: llm.base_url(p) for p in ("openai", "anthropic", "gemini")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(bases)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "anthropic": "rewritten: u", "gemini": "rewritten: u", "openai": "rewritten: u"
    }
