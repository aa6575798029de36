"""Drawing a session's snapshot tree: as indented text, as Mermaid, as Graphviz DOT, and through Graphviz's
``dot`` as an SVG or PNG image.

Every drawing shows each snapshot's id, status and message count, children in
creation order under their parent, and marks the session's leaf. A snapshot
whose parent is not among those drawn (pruned by Genkit's FileSessionStore,
say) is drawn as a root.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from genkit_sessions.cli._command import write_output
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot

__all__ = ["FORMATS", "IMAGE_SUFFIXES", "render", "render_dot", "render_image", "render_mermaid", "render_text"]

FORMATS = ("text", "mermaid", "dot")
"""The drawings :func:`render` makes."""

IMAGE_SUFFIXES = {".svg": "svg", ".png": "png"}
"""File suffixes :func:`render_image` writes, with Graphviz's name for each format."""

_STATUS_COLOURS = {
    "completed": "#d8f0d8",
    "pending": "#fff3c4",
    "aborting": "#ffe0b0",
    "aborted": "#e6e6e6",
    "failed": "#f6d0d0",
}


def _children(snapshots: Sequence[SessionSnapshot]) -> dict[str | None, list[SessionSnapshot]]:
    known = {s.snapshot_id for s in snapshots}
    children: dict[str | None, list[SessionSnapshot]] = {}
    for snapshot in snapshots:
        parent = snapshot.parent_id if snapshot.parent_id in known else None
        children.setdefault(parent, []).append(snapshot)
    return children


def _messages(snapshot: SessionSnapshot) -> int:
    return len(snapshot.state.message_list) if snapshot.state else 0


def _label(snapshot: SessionSnapshot, id_length: int | None) -> str:
    shown = snapshot.snapshot_id[:id_length] if id_length else snapshot.snapshot_id
    return f"{shown} {snapshot.effective_status.value} ({_messages(snapshot)} msgs)"


def render_text(
    snapshots: Sequence[SessionSnapshot], *, leaf_id: str | None = None, id_length: int | None = 8
) -> list[str]:
    """The tree as indented lines (``|--`` / ``\\`--`` branches), ``<- leaf`` after the leaf.

    ``id_length`` shortens ids to that many characters (None: whole ids).
    """
    children = _children(snapshots)
    lines: list[str] = []

    def draw(node: SessionSnapshot, prefix: str, last: bool, root: bool) -> None:
        branch = "" if root else ("`-- " if last else "|-- ")
        marker = "  <- leaf" if node.snapshot_id == leaf_id else ""
        lines.append(f"{prefix}{branch}{_label(node, id_length)}{marker}")
        kids = children.get(node.snapshot_id, [])
        for index, kid in enumerate(kids):
            draw(kid, prefix + ("" if root else ("    " if last else "|   ")), index == len(kids) - 1, False)

    for root in children.get(None, []):
        draw(root, "", True, True)
    return lines


def _ordered(snapshots: Sequence[SessionSnapshot]) -> list[SessionSnapshot]:
    """Depth first, children in creation order: the order the text drawing uses."""
    children = _children(snapshots)
    ordered: list[SessionSnapshot] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        node = stack.pop()
        ordered.append(node)
        stack.extend(reversed(children.get(node.snapshot_id, [])))
    return ordered


def render_mermaid(
    snapshots: Sequence[SessionSnapshot], *, leaf_id: str | None = None, id_length: int | None = 8
) -> str:
    """A Mermaid ``flowchart`` (paste it into a Markdown file or mermaid.live); the leaf has a thick border."""
    ordered = _ordered(snapshots)
    names = {s.snapshot_id: f"n{i}" for i, s in enumerate(ordered)}
    lines = ["flowchart TD"]
    for snapshot in ordered:
        label = _label(snapshot, id_length).replace('"', "#quot;")
        if snapshot.snapshot_id == leaf_id:
            label += " leaf"
        lines.append(f'  {names[snapshot.snapshot_id]}["{label}"]:::{snapshot.effective_status.value}')
    for snapshot in ordered:
        if snapshot.parent_id in names:
            lines.append(f"  {names[snapshot.parent_id]} --> {names[snapshot.snapshot_id]}")
    for status, colour in _STATUS_COLOURS.items():
        lines.append(f"  classDef {status} fill:{colour}")
    if leaf_id in names:
        lines.append(f"  style {names[leaf_id]} stroke-width:3px")
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(snapshots: Sequence[SessionSnapshot], *, leaf_id: str | None = None, id_length: int | None = 8) -> str:
    """A Graphviz ``digraph`` (render it with ``dot -Tsvg``); the leaf has a bold border."""
    ordered = _ordered(snapshots)
    lines = [
        "digraph session {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    known = {s.snapshot_id for s in ordered}
    for snapshot in ordered:
        status = snapshot.effective_status.value
        label = _label(snapshot, id_length) + (" leaf" if snapshot.snapshot_id == leaf_id else "")
        extra = ', penwidth=3, style="rounded,filled,bold"' if snapshot.snapshot_id == leaf_id else ""
        colour = _STATUS_COLOURS.get(status, "#ffffff")
        node = _dot_string(snapshot.snapshot_id)
        lines.append(f'  {node} [label={_dot_string(label)}, fillcolor="{colour}"{extra}];')
    for snapshot in ordered:
        if snapshot.parent_id in known:
            lines.append(f"  {_dot_string(snapshot.parent_id or '')} -> {_dot_string(snapshot.snapshot_id)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(
    snapshots: Sequence[SessionSnapshot], fmt: str, *, leaf_id: str | None = None, id_length: int | None = 8
) -> str:
    """The drawing named by ``fmt`` (one of :data:`FORMATS`), as text ending in a newline."""
    if fmt == "text":
        lines = render_text(snapshots, leaf_id=leaf_id, id_length=id_length)
        return "".join(line + "\n" for line in lines)
    if fmt == "mermaid":
        return render_mermaid(snapshots, leaf_id=leaf_id, id_length=id_length)
    if fmt == "dot":
        return render_dot(snapshots, leaf_id=leaf_id, id_length=id_length)
    raise GenkitError(Status.INVALID_ARGUMENT, f"unknown drawing format {fmt!r}; use one of {', '.join(FORMATS)}")


def render_image(dot_source: str, path: Path) -> None:
    """Write ``dot_source`` as an image at ``path`` (``.svg`` or ``.png``) through Graphviz's ``dot``.

    FAILED_PRECONDITION, naming the package to install, when ``dot`` is not on the PATH, and naming
    the path when it cannot be written; INVALID_ARGUMENT for another suffix; INTERNAL when ``dot`` fails.
    """
    fmt = IMAGE_SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"cannot draw an image as {path.name!r}; name the file .svg or .png (or write --format dot to a .dot file)",
        )
    dot = shutil.which("dot")
    if dot is None:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            "drawing an image needs Graphviz's `dot`, which is not on the PATH; install the graphviz package "
            "(apt-get install graphviz, brew install graphviz, choco install graphviz), "
            "or write --format dot and render it elsewhere",
        )
    result = subprocess.run([dot, f"-T{fmt}"], input=dot_source.encode(), capture_output=True, check=False)
    if result.returncode != 0:
        raise GenkitError(
            Status.INTERNAL,
            f"Graphviz's dot failed ({result.returncode}): {result.stderr.decode(errors='replace').strip()}; "
            "check the installation with `dot -V`",
        )
    write_output(path, result.stdout, "the image")
