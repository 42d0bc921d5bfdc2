"""The fake model providers for tests and benchmarks; the server itself lives in collab.llm.fake (product code).

`python -m collab.testing.fakes [--model extraction]` serves them in a process of its own (benchmarks).
"""

from collab.llm.fake import PROVIDERS, FakeProviders, answer, last_user_text

__all__ = ["PROVIDERS", "FakeProviders", "last_user_text", "main"]


def main() -> None:
    """Serve the fakes in this process until killed; prints the root URL (benchmarks, manual tries).

    `--model extraction` answers the extraction prompts with the deterministic stand-in model.
    """
    import signal
    import sys

    fake = FakeProviders().start()
    if sys.argv[1:] == ["--model", "extraction"]:
        fake.responder = answer
    print(fake.root, flush=True)
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    fake.stop()


if __name__ == "__main__":
    main()
