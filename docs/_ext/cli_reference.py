"""``{cli-reference}``: the command line's reference, generated from the argument parser.

Each verb of ``schedsweep.pipeline.cli.build_parser()`` becomes a section holding its ``--help``
text, so a verb or option added to the parser is documented by the next build, and a page can
never describe an option the parser no longer has.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: Width the help is wrapped at (argparse reads COLUMNS), so the page is the same on every machine.
WIDTH = "96"


def verbs(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every sub-command, in the parser's order."""
    for action in parser._actions:  # argparse keeps its sub-commands only here
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def help_text(parser: argparse.ArgumentParser) -> str:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return parser.format_help()
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


class CliReference(SphinxDirective):
    """One section per verb (``schedsweep VERB``) with its help, after the top-level help."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from schedsweep.pipeline.cli import build_parser

        parser = build_parser()
        out: list[nodes.Node] = [nodes.literal_block(text=help_text(parser), language="text")]
        for name, sub in verbs(parser):
            section = nodes.section(ids=[nodes.make_id(f"schedsweep-{name}")])
            section += nodes.title(text=f"schedsweep {name}")
            section += nodes.literal_block(text=help_text(sub), language="text")
            out.append(section)
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
