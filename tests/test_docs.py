"""The documentation in ``docs/`` holds together and the repository stands on its own.

Every relative link of the docs, README and CONTRIBUTING reaches a tracked file (and its
heading, when it names one); links of ``docs/`` stay inside it, so that a Sphinx/MyST build of
the folder resolves them; every ``docs/...md`` a tracked file mentions exists; the index's table
of contents holds every page; each model page names every parameter and metric of its workload;
and no tracked file refers to the team folder beside the checkout."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

REPO = Path(__file__).resolve().parents[1]

#: A reference to the team folder beside the checkout (its relative path, its pages, traces,
#: peers or tools), or a path built to reach it from the repository's root or parent: "shared"
#: as a quoted path component (the / operator, os.path.join); prose is not matched.
OUTSIDE = re.compile(r"""\.\./shared|shared/(?:spec|peers|traces|tools)\b|["']shared["']\s*/|/\s*["']shared["']"""
                     r"""|,\s*["']shared["']""")

#: Files that may name the folder beside the checkout (none: the peers' folder is named by
#: SCHEDSWEEP_PEERS alone). The test fails on an entry that no longer matches.
PENDING: set[str] = set()

#: Workloads with a model page of their own (mm1, the pipeline check, has none).
MODEL_PAGES = ("slot_selection", "cyclic", "cluster", "ga", "desktop_grid")

BINARY = (".gz", ".png", ".npz", ".npy", ".pkl", ".zarr", ".parquet", ".nc")
FENCE = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1")
INLINE_CODE = re.compile(r"`[^`]+`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    if out.returncode or not out.stdout:
        pytest.fail("git ls-files found no files: these tests need the repository's git checkout")
    return [name for name in out.stdout.split("\0") if name and (REPO / name).is_file()]


def text_of(name: str) -> str | None:
    if name.endswith(BINARY):
        return None
    try:
        return (REPO / name).read_text()
    except (UnicodeDecodeError, OSError):
        return None


def prose(markdown: str) -> str:
    """The text of a Markdown page without its code (fenced blocks, inline code)."""
    return INLINE_CODE.sub("", FENCE.sub("", markdown))


def slug(heading: str) -> str:
    """The anchor of a heading as GitHub and MyST (``myst_heading_anchors``) make it."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", markdown))}


def doc_pages(files: list[str]) -> list[str]:
    return sorted(f for f in files if f.startswith("docs/") and f.endswith(".md"))


def test_slug_and_prose_helpers():
    # the anchors the pages link to, made as a renderer makes them
    assert slug("Literature-compatible semantics (pyss)") == "literature-compatible-semantics-pyss"
    assert slug("Defaults *(our rule: the source fixes none of these)*") == \
        "defaults-our-rule-the-source-fixes-none-of-these"
    assert slug("The `cluster` workload") == "the-cluster-workload"
    assert prose("a [x](y.md) `[z](w.md)`\n```\n[v](u.md)\n```\n") == "a [x](y.md) \n\n"


def test_relative_links_resolve_to_tracked_files_and_headings():
    files = tracked()
    known = set(files)
    pages = doc_pages(files) + ["README.md", "CONTRIBUTING.md"]
    assert len(pages) > 2, "no pages under docs/"
    broken = []
    for page in pages:
        body = (REPO / page).read_text()
        for target in LINK.findall(prose(body)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):      # https:, mailto:: not ours to check
                continue
            path, _, anchor = target.partition("#")
            resolved = PurePosixPath(page).parent / path if path else PurePosixPath(page)
            parts: list[str] = []
            for part in resolved.parts:
                if part == "..":
                    if not parts:
                        broken.append(f"{page}: {target} leaves the repository")
                        break
                    parts.pop()
                elif part != ".":
                    parts.append(part)
            else:
                name = "/".join(parts)
                if page.startswith("docs/") and not name.startswith("docs/"):
                    # a Sphinx/MyST build of docs/ cannot resolve it (myst.xref_missing): name
                    # the file as `code` instead
                    broken.append(f"{page}: {target} links out of docs/")
                elif name not in known:
                    broken.append(f"{page}: {target} is not a tracked file")
                elif anchor and name.endswith(".md") and anchor not in anchors((REPO / name).read_text()):
                    broken.append(f"{page}: {target}: no heading '{anchor}' in {name}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_docs_path_mentioned_in_the_tree_exists():
    files = tracked()
    known = set(files)
    missing = []
    for name in files:
        text = text_of(name)
        if text is None:
            continue
        for k, line in enumerate(text.splitlines(), 1):
            missing += [f"{name}:{k}: {m}" for m in re.findall(r"(?<![\w/.])docs/[\w/.-]*\w\.md", line)
                        if m not in known]
    assert not missing, "references to documentation pages that do not exist:\n" + "\n".join(missing)


def test_the_index_lists_every_page():
    files = tracked()
    index = (REPO / "docs" / "index.md").read_text()
    block = re.search(r"(?ms)^```\{toctree\}\n(.*?)^```", index)
    assert block, "docs/index.md has no toctree"
    entries = {line.strip() for line in block.group(1).splitlines()
               if line.strip() and not line.strip().startswith(":")}
    pages = {f.removeprefix("docs/").removesuffix(".md") for f in doc_pages(files)} - {"index"}
    assert entries == pages, f"toctree {sorted(entries)} against pages {sorted(pages)}"


@pytest.mark.parametrize("workload", MODEL_PAGES)
def test_model_page_names_every_parameter_and_metric(workload):
    """A parameter or metric added to a workload without a word on its page fails here."""
    module = importlib.import_module(f"schedsweep.workloads.{workload}")
    page = REPO / "docs" / "models" / f"{workload}.md"
    code = " ".join(INLINE_CODE.findall(FENCE.sub("", page.read_text())))

    def named(name: str) -> bool:
        return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code) is not None

    missing = [p.name for p in module.PARAMS if not named(p.name)]
    missing += [m.name for m in module.METRICS if not named(m.name)]
    assert not missing, f"{page.relative_to(REPO)} does not name (in `code`): {', '.join(missing)}"
    assert "*(our rule" in page.read_text(), f"{page.relative_to(REPO)} marks no choice of ours"


def test_no_tracked_file_refers_outside_the_repository():
    files = tracked()
    found, stale = [], []
    for name in files:
        text = text_of(name)
        if text is None:
            continue
        hits = [f"{name}:{k}: {line.strip()[:100]}" for k, line in enumerate(text.splitlines(), 1)
                if OUTSIDE.search(line)]
        if name in PENDING:
            if not hits:
                stale.append(name)
        else:
            found += hits
    missing = sorted(PENDING - set(files))
    assert not found, "references to the folder beside the checkout (the docs pages are in docs/):\n" \
        + "\n".join(found)
    assert not stale and not missing, ("PENDING lists files that no longer refer outside the "
                                       f"repository: remove them from tests/test_docs.py: {stale + missing}")


def test_outside_pattern():
    # written in pieces, so that this file does not hold what it looks for
    assert OUTSIDE.search("see `.." "/sha" "red/spec/cluster.md`") and OUTSIDE.search("shared" "/peers/x.py")
    assert OUTSIDE.search('ROOT.parent / "sha' 'red"') and OUTSIDE.search('join(here, "..", "sha' 'red")')
    assert OUTSIDE.search('PEERS = ROOT.parent / "sha' 'red" / "peers"') and OUTSIDE.search('"..' '/sha' 'red/traces"')
    assert OUTSIDE.search("'sha" "red' / 'peers'") and OUTSIDE.search("os.path.join(root, 'sha" "red')")
    assert not OUTSIDE.search("shared alternatives") and not OUTSIDE.search("a shared 2-core machine")
    assert not OUTSIDE.search("shared_alternatives = true")


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """`sphinx-build -W` of docs/ passes, its API reference documents every public name of
    `schedsweep.pipeline` and its CLI reference every verb of the parser (the `docs` extra,
    which the `test` extra includes, installs Sphinx and MyST)."""
    if importlib.util.find_spec("sphinx") is None or importlib.util.find_spec("myst_parser") is None:
        pytest.fail("Sphinx and myst-parser are missing: pip install -e '.[test]' (its docs extra) installs them")
    from schedsweep import pipeline
    from schedsweep.pipeline.cli import build_parser

    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          str(REPO / "docs"), str(tmp_path / "html")], capture_output=True, text=True)
    assert out.returncode == 0, f"sphinx-build -W failed:\n{out.stderr[-4000:]}"
    api = (tmp_path / "html" / "api.html").read_text()
    missing = [name for name in pipeline.__all__ if name != "__version__"
               and f'id="schedsweep.pipeline.{name}"' not in api]
    assert not missing, f"docs/api.md documents no {missing}"
    cli_page = (tmp_path / "html" / "cli.html").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [verb for verb in sub.choices if f'id="schedsweep-{verb}"' not in cli_page]
    assert not missing, f"the CLI reference has no section for {missing}"
