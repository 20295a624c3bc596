"""Side-by-side anchor for `clawbridge-bench`: the official Python Claude Agent SDK consuming one
Claude stream-json stream from a stand-in CLI (its `cli_path` option), timed like clawbridge is.

Usage (the venv comes from scripts/bench-sdk-anchor.sh):
    python scripts/sdk-anchor/anchor.py --cli PATH [--prompt TEXT]

Prints one JSON line: messages yielded by `query()`, seconds from the call to the last message (the
CLI's spawn and the initialize handshake included), the message kinds, and the versions.
"""

import argparse
import asyncio
import json
import sys
import time
from importlib.metadata import version

from claude_agent_sdk import ClaudeAgentOptions, query


async def consume(cli: str, prompt: str) -> dict:
    options = ClaudeAgentOptions(cli_path=cli, include_partial_messages=True)
    kinds: dict[str, int] = {}
    count = 0
    started = time.perf_counter()
    async for message in query(prompt=prompt, options=options):
        count += 1
        name = type(message).__name__
        kinds[name] = kinds.get(name, 0) + 1
    seconds = time.perf_counter() - started
    return {"messages": count, "seconds": seconds, "kinds": kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, help="the stand-in claude executable")
    parser.add_argument("--prompt", default="Run the test suite and tell me what failed.")
    args = parser.parse_args()
    result = asyncio.run(consume(args.cli, args.prompt))
    result["sdkVersion"] = version("claude-agent-sdk")
    result["python"] = sys.version.split()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
