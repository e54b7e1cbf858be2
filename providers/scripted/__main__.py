"""``python -m providers.scripted --port P [--script file.json] [--rules]``

Runs the scripted provider until interrupted and prints its base URL (ending
in ``/v1``) as the first line on stdout, so a parent process can read it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import trio

from ..errors import ScriptError
from .server import serve_scripted_provider
from .steps import Step, parse_steps


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m providers.scripted", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    parser.add_argument("--script", type=Path, help="JSON file: a step, a list of steps or {\"steps\": [...]}")
    parser.add_argument("--rules", action="store_true", help="answer with the demo rules when the script is empty")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before the first byte of each rule reply")
    return parser.parse_args(argv)


async def _serve(host: str, port: int, steps: list[Step], rules: bool, latency: float) -> None:
    async with serve_scripted_provider(steps, rule_mode=rules, host=host, port=port, rule_latency=latency) as server:
        print(server.base_url, flush=True)
        await trio.sleep_forever()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = _parse_args(argv)
    steps: list[Step] = []
    if args.script is not None:
        try:
            steps = parse_steps(json.loads(args.script.read_text()))
        except (OSError, ValueError, ScriptError) as exc:
            print(f"error: cannot load script {args.script}: {exc}", file=sys.stderr)
            return 2
    try:
        trio.run(_serve, args.host, args.port, steps, args.rules, args.latency)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
