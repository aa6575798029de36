"""The end-to-end Genkit agent scenarios on three stores, and where Genkit's own store differs.

Runs every scenario of ``tests/genkit_scenarios.py`` (a real ``genkit==0.12.0`` agent, a model defined
as a Python function, no network; each scenario checks what is stored, read back through the store's
own API) against:

- Genkit's own ``InMemorySessionStore``, used directly;
- our ``InMemorySessionStore`` through ``genkit_sessions.genkit.GenkitSessionStore``;
- our ``DynamoDBSessionStore`` through the adapter, on a moto server this program starts on 127.0.0.1.

It prints one table: scenario x store -> pass, or differs with the first check that failed. Run from
``.venv`` (``scripts/test`` creates it) or ``.venv-bench``::

    python benchmarks/genkit_scenarios.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from genkit_sessions import InMemorySessionStore
from tests.dynamodb_backends import make_client, server_endpoint, store_factory
from tests.genkit_scenarios import SCENARIOS, Backend, Differs, GenkitInMemory, Ours, Scenario, run_scenario


def backends() -> list[tuple[str, Callable[[], Backend]]]:
    """Each store as a factory of fresh, empty backends (a new DynamoDB table per scenario)."""
    fresh_table = store_factory(make_client(server_endpoint()))
    return [
        ("Genkit InMemorySessionStore", GenkitInMemory),
        ("ours: memory", lambda: Ours(InMemorySessionStore().aio)),
        ("ours: DynamoDB (moto server)", lambda: Ours(fresh_table().aio)),
    ]


def outcome(make: Callable[[], Backend], scenario: Scenario, verbose: bool) -> str:
    """ "pass", or "differs: " and the first check that failed (or what raised)."""
    with tempfile.TemporaryDirectory() as workdir:
        try:
            run_scenario(make(), scenario, Path(workdir))
        except Differs as differs:
            return f"differs: {differs}"
        except Exception as exc:
            if verbose:
                traceback.print_exc()
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            return f"differs: raised {type(exc).__name__}: {first_line}".rstrip(": ")
    return "pass"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="print the traceback of a scenario that raised")
    args = parser.parse_args()

    stores = backends()
    rows = []
    for scenario in SCENARIOS:
        cells = [outcome(make, scenario, args.verbose) for _, make in stores]
        rows.append((scenario.name, cells))

    print("Genkit 0.12.0 agent scenarios: what each store stored, read back through its own API\n")
    print("| scenario | " + " | ".join(name for name, _ in stores) + " |")
    print("|---" * (len(stores) + 1) + "|")
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")
    ours_failing = sum(cell != "pass" for _, cells in rows for cell in cells[1:])
    print(f"\nour stores: {sum(len(cells) - 1 for _, cells in rows) - ours_failing} of {len(rows) * 2} pass")
    sys.exit(1 if ours_failing else 0)


if __name__ == "__main__":
    main()
