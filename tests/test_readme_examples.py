"""Every command block of README.md and of the pages in docs/ (```bash and ```console) is
executed here, so an example cannot drift from the code.

Each block runs in a fresh folder, its `schedsweep` commands in order through the CLI's
`main` (this checkout's code), each of which must exit 0. A command that is not run as
written is in one of three listed tables, never skipped silently:

* OVERRIDES: run at reduced size (a long spec) or on a concrete store (a placeholder such as
  `results/X.zarr`), with the reason;
* EXCEPTIONS: not runnable in a test (installing, Slurm sites, sbatch, the test suite
  itself), with the reason and where else it is exercised;
* SETUP: commands run (in this process, small) before a block, to make the stores it reads.

The `--set` example of "Overrides" runs exactly as written. A block whose every command is
an exception (the Slurm ones) has nothing to run; test_tables_match_the_readme checks that
each of its commands is listed. A README command found in none of the tables and not starting
with `schedsweep` fails that test, and so does a table entry that no longer matches the README.
"""
from __future__ import annotations

import gzip
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from schedsweep.pipeline import cli
from schedsweep.pipeline.spec.sweep import parse

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
#: The pages whose command blocks run: the README and every page of the documentation site.
PAGES = [README] + sorted((REPO / "docs").rglob("*.md"))

SMALL_MM1 = "--set replications=10 --set params.customers=2000 --set params.warmup=200 --workers 0"

TOUR = "schedsweep workloads"  # blocks are named by their first command
SHORT_TOUR = "schedsweep run jobs/mm1.toml --dry-run"  # the README's
GROW = "schedsweep run jobs/mm1.toml --set replications=2000"
SMALL_GROW = "--set params.customers=2000 --set params.warmup=200"
VERIFY = "schedsweep verify jobs/mm1.toml jobs/slot-selection.toml --replications 20"

#: (block, README command) -> (command run instead, reason)
OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    (TOUR, "schedsweep run jobs/mm1.toml"): (
        "schedsweep run jobs/mm1.toml --set replications=20 --workers 0",
        "the full spec is 6,000 replications of 50,000 customers (about a CPU-minute); 20 per cell "
        "keep every later command of the tour meaningful. --workers 0 (here: no worker processes to "
        "start) in every override: a store is the same bit for bit for any number of workers"),
    (SHORT_TOUR, "schedsweep run jobs/mm1.toml"): (
        "schedsweep run jobs/mm1.toml --set replications=20 --workers 0",
        "as in the full tour (docs/getting-started.md): 20 replications per cell for the commands after it"),
    (TOUR, "schedsweep table results/X.zarr --ratio policy=gcmu"): (
        "schedsweep table results/G.zarr --ratio policy=gcmu",
        "X is a placeholder; G is a small desktop-grid store (policy is a desktop_grid dimension)"),
    (GROW, GROW): (
        f"schedsweep run jobs/mm1.toml --set replications=40 {SMALL_GROW} --workers 0",
        "grows the SETUP store of 10 replications to 40 (small customers) instead of 1,000 to 2,000"),
    (GROW, "schedsweep run jobs/mm1.toml"): (
        f"schedsweep run jobs/mm1.toml --set replications=40 {SMALL_GROW} "
        "--set sweep.arrival_rate=[0.1,0.3,0.5,0.7,0.8,0.9,0.95] --workers 0",
        "the README's comment says to add a value at the end of the sweep first: 0.95, as an override"),
    (VERIFY, VERIFY): (
        f"{VERIFY} --workers 0", "the two runs in this process (no worker processes to start)"),
}

#: README command -> reason it is not run here
EXCEPTIONS: dict[str, str] = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && schedsweep run jobs/quickstart.toml":
        "installs the package into a new venv (tests/test_install.py installs a wheel; quickstart runs in CI's "
        "own install step)",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e \".[test]\" && python -m pytest":
        "the test suite itself (what .ci/run runs)",
    "schedsweep jobs":
        "validates every shipped spec, importing every workload and compiling the plug-in examples (about 25 s "
        "here); tests/test_catalogue.py::test_every_job_in_the_catalogue_validates builds the same catalogue",
    "schedsweep jobs --estimate":
        "pilots every shipped spec never run here (about 40 specs, minutes of CPU); tests/test_validation_cli.py "
        "runs --estimate on small specs",
    "schedsweep verify --quick --check-expected":
        "the same command runs in tests/test_verify.py::test_verify_quick_keeps_every_committed_verdict",
    "schedsweep run jobs/slot-selection.toml --cluster slurm --profile slurm/mysite.yaml --jobs 40 "
    "--cores-per-job 16 --memory 32GB --walltime 04:00:00 --partition compute --account myproject":
        "a site's Slurm cluster and profile (tests/test_slurm_cluster.py runs --cluster slurm on a local Slurm)",
    "sbatch slurm/sweep.sbatch jobs/X.toml":
        "sbatch on a site's cluster (tests/test_slurm_cluster.py submits slurm/sweep.sbatch to a local Slurm)",
    "sbatch --ntasks=128 --mem-per-cpu=2G --time=12:00:00 -p compute -A myproject slurm/sweep.sbatch jobs/X.toml "
    "results/X.zarr --batch-seconds 10":
        "128 tasks on a site's cluster (tests/test_slurm_cluster.py submits slurm/sweep.sbatch to a local Slurm)",
    "bash slurm/install.sh": "root and Debian packages: .ci/run runs it before the tests",
    "bash slurm/multihost.sh up": "root, network namespaces and Slurm daemons: .ci/run runs it before the tests",
    "bash slurm/multihost.sh down": "ends the multi-host Slurm: .ci/run's exit trap runs it",
    "bash slurm/multihost.sh poweroff c2": "kills a compute host: tests/test_slurm_multihost.py does it mid-sweep",
    "bash slurm/multihost.sh cut c2": "cuts a compute host's link: tests/test_slurm_multihost.py does it mid-sweep, for 60 s and for good",
    "bash slurm/multihost.sh run login python -m schedsweep.pipeline.cli run jobs/mm1.toml --cluster slurm "
    "--profile slurm/multihost.yaml":
        "the multi-host Slurm of .ci/run: tests/test_slurm_multihost.py runs --cluster slurm from the login host",
    "bash slurm/multihost.sh run login sbatch --nodes=2 --ntasks=2 slurm/sweep.sbatch jobs/mm1.toml":
        "the multi-host Slurm of .ci/run: tests/test_slurm_multihost.py submits sweep.sbatch on two nodes",
    "SCHEDSWEEP_EXPECT_MULTIHOST=1 python -m pytest tests/test_slurm_multihost.py":
        "the tests themselves (.ci/run sets the variable and runs the whole suite)",
    "bash slurm/start.sh": "starts Slurm daemons: .ci/run runs it before the tests",
    "bash slurm/check.sh": "needs the daemons of slurm/start.sh; .ci/run starts them, tests/test_slurm_cluster.py "
                           "checks the node",
    "schedsweep run jobs/mm1.toml --cluster slurm --profile slurm/local.yaml":
        "needs the local Slurm of slurm/start.sh; tests/test_slurm_cluster.py runs the same route",
    "SCHEDSWEEP_EXPECT_SLURM=1 python -m pytest tests/test_slurm_cluster.py": "a test file of the suite itself",
    "bash slurm/stop.sh": "stops the daemons of slurm/start.sh; .ci/run runs it at the end",
}

#: Block (by its first README command) -> commands run before it, in this process
SETUP: dict[str, list[str]] = {
    "schedsweep workloads": [
        "schedsweep run jobs/quickstart.toml --set replications=3 --store results/X.zarr --workers 0",
        "schedsweep run jobs/desktop-grid-plugin-example.toml --set replications=2 --set params.horizon=2000 "
        "--set params.warmup=200 --set 'sweep.policy=[\"gcmu\",\"pst\"]' --store results/G.zarr --workers 0",
    ],
    "schedsweep run jobs/mm1.toml --set replications=2000": [f"schedsweep run jobs/mm1.toml {SMALL_MM1}"],
    "schedsweep export results/mm1.zarr --to netcdf": [
        f"schedsweep run jobs/mm1.toml {SMALL_MM1}",
        f"schedsweep run jobs/mm1.toml {SMALL_MM1} --set sweep.arrival_rate=[0.1] --store results/part1.zarr",
        f"schedsweep run jobs/mm1.toml {SMALL_MM1} --set sweep.arrival_rate=[0.3] --store results/part2.zarr",
    ],
    "schedsweep gantt results/X.zarr --sel queue=easy --replication 1 -o easy-r1.png": [
        "schedsweep run jobs/cluster-plugin-example.toml --set replications=2 --set params.jobs=100 "
        "--set 'sweep.queue=[\"easy\",\"fcfs\"]' --store results/X.zarr --workers 0",
    ],
    VERIFY: [
        f"schedsweep run jobs/mm1.toml {SMALL_MM1}",
    ],
    # docs/store.md, many stores: one store per service_rate, same seed (paired)
    "schedsweep table results/mu --paired service_rate=1.0 --metric mean_wait": [
        f"schedsweep run jobs/mm1.toml {SMALL_MM1} --set sweep.arrival_rate=[0.3,0.5] --store results/mu/slow.zarr",
        f"schedsweep run jobs/mm1.toml {SMALL_MM1} --set sweep.arrival_rate=[0.3,0.5] --set params.service_rate=1.25 "
        "--store results/mu/fast.zarr",
    ],
}


def _normal(command: str) -> str:
    return " ".join(command.split())


def readme_blocks() -> list[tuple[str, list[str]]]:
    """(page:line, commands) of every ```bash / ```console block of the README and docs/:
    continuation lines joined, comments and prompts removed."""
    blocks = []
    for page in PAGES:
        blocks += _blocks(page)
    return blocks


def _blocks(page: Path) -> list[tuple[str, list[str]]]:
    text = page.read_text()
    blocks = []
    for m in re.finditer(r"^```(bash|console|sh|shell)\n(.*?)^```", text, re.S | re.M):
        line = text[:m.start()].count("\n") + 1
        joined = m.group(2).replace("\\\n", " ")
        commands = []
        for raw in joined.splitlines():
            raw = raw.strip().removeprefix("$ ")
            if not raw or raw.startswith("#"):
                continue
            commands.append(_normal(re.sub(r"\s#.*$", "", raw)))  # a comment follows a space
        blocks.append((f"{page.relative_to(REPO)}:{line}", commands))
    return blocks


BLOCKS = readme_blocks()


def _argv(command: str) -> list[str]:
    words = shlex.split(command)
    assert words[0] == "schedsweep", command
    return words[1:]


def _run(command: str, capsys) -> None:
    code = cli.main(_argv(command))
    out, err = capsys.readouterr()
    assert code == 0, f"`{command}` exited {code}:\n{err[-2000:]}"


def test_tables_match_the_readme():
    """Every listed override, exception and setup names a command the README still has."""
    commands = {c for _, block in BLOCKS for c in block}
    firsts = {block[0] for _, block in BLOCKS}
    stale = [c for c in [c for _, c in OVERRIDES] + list(EXCEPTIONS) if _normal(c) not in commands]
    stale += [b for b in [b for b, _ in OVERRIDES] + list(SETUP) if b not in firsts]
    assert not stale, f"listed but no longer in README.md or docs/: {stale}"
    unknown = [c for c in commands if not c.startswith("schedsweep ") and c not in EXCEPTIONS]
    assert not unknown, f"README/docs commands that this test cannot run and does not list: {unknown}"


RUNNABLE = [(line, block) for line, block in BLOCKS if any(c not in EXCEPTIONS for c in block)]


@pytest.mark.parametrize("line,commands", RUNNABLE, ids=[where for where, _ in RUNNABLE])
def test_readme_block_runs(line, commands, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # specs are found as shipped; stores go to ./results
    for command in SETUP.get(commands[0], []):
        _run(command, capsys)
    for command in commands:
        if command not in EXCEPTIONS:
            _run(OVERRIDES.get((commands[0], command), (command, ""))[0], capsys)


def test_the_override_example_is_run_exactly_as_written():
    """The README's --set example, which removes mm1's referenced arrival rates, runs as is
    (test_readme_block_runs); its dropped reference points are one line, not a refusal."""
    example = ("schedsweep run jobs/mm1.toml --set params.customers=20000 --set sweep.arrival_rate=[0.5,0.9] "
               "--set replications=50")
    assert any(example in block for _, block in BLOCKS)
    assert example not in EXCEPTIONS and all(c != example for _, c in OVERRIDES)


#: (page, line of a ```python block) -> (line run instead, reason); every other line runs as written.
PY_OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    ("docs/getting-started.md", 'path = pipeline.run("jobs/mm1.toml", workers=2)'): (
        'path = pipeline.run("jobs/mm1.toml", workers=0, overrides=["replications=10", '
        '"params.customers=2000", "params.warmup=200"])',
        "the full spec is about a CPU-minute; in this process (a store is the same for any workers)"),
}


def python_blocks() -> list[tuple[str, str]]:
    """(page:line, code) of every ```python block of the README and docs/ (indented ones too)."""
    blocks = []
    for page in PAGES:
        text = page.read_text()
        name = str(page.relative_to(REPO))
        for m in re.finditer(r"^([ \t]*)```python\n(.*?)^\1```", text, re.S | re.M):
            lines = [line[len(m.group(1)):] for line in m.group(2).splitlines()]
            lines = [PY_OVERRIDES.get((name, line.split("  #")[0].rstrip()), (line, ""))[0] for line in lines]
            blocks.append((f"{name}:{text[:m.start()].count(chr(10)) + 1}", "\n".join(lines)))
    return blocks


PY_BLOCKS = python_blocks()


def test_python_overrides_match_the_pages():
    code = {(where.split(":")[0], line.split("  #")[0].rstrip())
            for where, _ in [(w, c) for w, c in PY_BLOCKS]
            for line in (REPO / where.split(":")[0]).read_text().splitlines()}
    stale = [key for key in PY_OVERRIDES if key not in code]
    assert not stale, f"PY_OVERRIDES name lines no longer on their page: {stale}"


@pytest.mark.parametrize("where,code", PY_BLOCKS, ids=[w for w, _ in PY_BLOCKS])
def test_python_block_runs(where, code, tmp_path, monkeypatch):
    """Each Python example runs (in a fresh folder, shipped specs found by name)."""
    monkeypatch.chdir(tmp_path)
    exec(compile(code, where, "exec"), {"__name__": "docs_example"})


#: A record of the Standard Workload Format (18 fields): job 1, submitted at 0, waited 0, ran 10 s
#: on 2 processors, asked for 2 processors and 20 s.
SWF_RECORD = "1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"


def toml_blocks() -> list[tuple[str, str]]:
    """(page:line, text) of every ```toml block of the README and docs/ (indented ones too)."""
    blocks = []
    for page in PAGES:
        text = page.read_text()
        for m in re.finditer(r"^([ \t]*)```toml\n(.*?)^\1```", text, re.S | re.M):
            body = "\n".join(line[len(m.group(1)):] for line in m.group(2).splitlines())
            blocks.append((f"{page.relative_to(REPO)}:{text[:m.start()].count(chr(10)) + 1}", body))
    return blocks


TOML_BLOCKS = toml_blocks()


@pytest.mark.parametrize("where,text", TOML_BLOCKS, ids=[w for w, _ in TOML_BLOCKS])
def test_toml_block_is_valid(where, text, tmp_path):
    """Every TOML example is TOML; one that names a workload is a spec the pipeline accepts as
    written (checked like a spec file in a folder beside `jobs/`; a trace it names is made there)."""
    doc = tomllib.loads(text)
    if "workload" not in doc:
        return
    trace = doc.get("params", {}).get("trace")
    if trace:
        (tmp_path / trace).parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(tmp_path / trace, "wt") as f:
            f.write("; MaxProcs: 4\n" + SWF_RECORD)
    base = REPO / "jobs" if "plugins_example" in text else tmp_path
    parse(text, where, base_dir=base)
