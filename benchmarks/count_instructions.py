"""Instructions per in-memory turn and lookup, counted under valgrind: ours against the synchronous peers.

Wall-clock medians of the short-history rows of ``bench_peers.py`` swing between runs, and within one
process: the same code on the same data times a batch of lookups at about 8.5 µs and the next at about
15 µs. A count of executed instructions does not swing: the same program gives the same count, so two
stores (or two versions of one) compare exactly on the work they do. It does not see cache misses.

Each store runs in its own Python (``--python PEER=PATH``, as ``bench_peers.py`` takes them) under
``valgrind --tool=cachegrind``, twice: once filling the sessions and building the calls' inputs, once
doing the same and then ``--calls`` calls. The difference, divided by the calls, is what one call costs.
Both runs set ``PYTHONHASHSEED=0``, so they do the same work up to the calls.

The workload is ``bench_peers.py``'s: resume a session by id, append a user and a model message, save
(``turn``), or the resume alone (``lookup``), on sessions of 6 distinct messages. Only synchronous
stores are counted: driving an event loop for an async peer would add its own instructions to the peer's.

    PYTHONPATH=. .venv-bench/bin/python benchmarks/count_instructions.py \\
        --python ours=.venv/bin/python --python langgraph-dict=.venv-bench/bin/python

Needs ``valgrind`` (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

SYNC_PEERS = ("ours", "langgraph", "langgraph-dict")
OPS = ("turn", "lookup")
_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def child(peer: str, op: str, sessions: int, calls: int, prepared: int) -> None:
    """Fill ``sessions`` sessions, build ``prepared`` calls' inputs, warm each op once, run ``calls`` calls."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_peers

    store = bench_peers.STORES[peer]()
    ids = [f"chat-{i:06d}" for i in range(sessions)]
    for session_id in ids:
        store.fill(session_id, bench_peers.history(session_id, 6))
    rng = random.Random(2)
    work = [
        (rng.choice(ids).encode().decode(), store.prepare(bench_peers.text(rng), bench_peers.text(rng)))
        for _ in range(prepared)
    ]
    store.lookup(ids[0])
    store.turn(ids[1], store.prepare("warm", "up"))
    if op == "lookup":
        for session_id, _ in work[:calls]:
            store.lookup(session_id)
    else:
        for session_id, inputs in work[:calls]:
            store.turn(session_id, inputs)


def count(python: str, peer: str, op: str, sessions: int, calls: int, prepared: int) -> int:
    """Instructions the child executes, counted by cachegrind."""
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        python,
        os.path.abspath(__file__),
        "--child",
        peer,
        op,
        str(sessions),
        str(calls),
        str(prepared),
    ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    found = _TOTAL.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{peer} {op} under valgrind failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_call(python: str, peer: str, op: str, sessions: int, calls: int) -> float:
    """Instructions one call costs: the run with ``calls`` calls minus the run without, over ``calls``."""
    with ThreadPoolExecutor(2) as pool:
        base = pool.submit(count, python, peer, op, sessions, 0, calls)
        full = pool.submit(count, python, peer, op, sessions, calls, calls)
        return (full.result() - base.result()) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--python", action="append", default=[], metavar="PEER=PATH", help="the Python that has PEER")
    parser.add_argument("--sessions", type=int, default=2_000, help="sessions of 6 messages to fill")
    parser.add_argument("--calls", type=int, default=2_000, help="calls counted per store and op")
    args = parser.parse_args(argv)
    if args.child:
        peer, op, sessions, calls, prepared = args.child
        child(peer, op, int(sessions), int(calls), int(prepared))
        return 0
    if shutil.which("valgrind") is None:
        print("count_instructions: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    pythons = dict(item.partition("=")[::2] for item in args.python) or {"ours": sys.executable}
    unknown = sorted(set(pythons) - set(SYNC_PEERS))
    if unknown:
        parser.error(f"--python names {', '.join(unknown)}; this program counts {', '.join(SYNC_PEERS)}")
    peers = [p for p in SYNC_PEERS if p in pythons]
    print(f"count_instructions: {args.sessions:,} sessions of 6 messages, {args.calls:,} calls per store and op")
    counts = {(peer, op): per_call(pythons[peer], peer, op, args.sessions, args.calls) for peer in peers for op in OPS}
    print(f"\n{'op':<8}" + "".join(f" {p:>22}" for p in peers))
    for op in OPS:
        ours = counts.get(("ours", op))
        cells = []
        for peer in peers:
            value = counts[(peer, op)]
            ratio = f" {value / ours:.2f}x" if ours and peer != "ours" else ""
            cells.append(f" {f'{value:,.0f}{ratio}':>22}")
        print(f"{op:<8}" + "".join(cells))
    print("\nInstructions per call; 'N.NNx' is the peer's count over ours (above 1: ours executes fewer).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
