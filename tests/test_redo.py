"""`make redo` (scalestudy/redo.py): study names from the config only, named
arguments, and nothing moved while a Snakemake workflow holds the study's results."""

import os
import subprocess
import sys

import pytest
import yaml

from scalestudy.redo import main
from tests.conftest import REPO, make


@pytest.fixture
def workdir(tmp_path):
    """A workflow folder: a config naming study s, two points of two runs each, and an
    archive of s that holds the same records."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": {"s": {}}}))
    for root in ("results/s", "archive/s/20260101T000000Z-unknown"):
        for point in ("t1", "t2"):
            for k in (1, 2):
                path = tmp_path / root / "runs" / point / f"rep{k}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("{}")
    (tmp_path / "Makefile").symlink_to(REPO / "Makefile")
    return tmp_path


def records(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("rep*.json"))


def make_redo(workdir, *args):
    return make(workdir, "redo", *args)


def test_redo_takes_a_study_of_the_config_never_a_folder(workdir):
    # the fault probe: `redo ../archive/s/<stamp>` moved an archive's records into a
    # discarded/ folder inside the archive
    archive = workdir / "archive" / "s" / "20260101T000000Z-unknown"
    with pytest.raises(SystemExit, match=r"redo: no study named '\.\./archive/s/2026"):
        main(["../archive/s/20260101T000000Z-unknown"], workdir)
    with pytest.raises(SystemExit, match="no study named 'x'.*give a study's name, not a folder"):
        main(["x"], workdir)
    assert len(records(archive)) == 4 and not (archive / "discarded").exists()


def test_make_redo_passes_point_and_repeat_by_name(workdir):
    # the fault probe: `make redo STUDY=s REPEAT=2` read 2 as the point
    alone = make_redo(workdir, "STUDY=s", "REPEAT=2")
    assert alone.returncode != 0
    assert "redo: REPEAT=2 names a run of a point: give its POINT= too" in alone.stderr
    done = make_redo(workdir, "STUDY=s", "POINT=t2", "REPEAT=1")
    assert done.returncode == 0, done.stderr
    assert "moved 1 record(s)" in done.stdout
    assert records(workdir / "results" / "s" / "runs") == ["t1/rep1.json", "t1/rep2.json",
                                                            "t2/rep2.json"]  # fmt: skip


def test_redo_refuses_while_a_snakemake_workflow_holds_the_results(workdir):
    # the fault probe: redo during a running workflow was accepted, and the workflow
    # then failed with "Missing files after 5 seconds ... filesystem latency". The
    # lock is written by Snakemake's own code, as a running workflow writes it.
    from snakemake.persistence.file import FilePersistence

    persistence = FilePersistence(path=workdir / ".snakemake")
    persistence._write_locks("output", ["results/s/runs/t2/rep1.json", "results/s/runs.csv"])
    with pytest.raises(SystemExit) as refused:
        main(["s", "--point", "t2"], workdir)
    assert str(refused.value).startswith(
        "redo: a Snakemake workflow here holds the results of s (" + str(workdir / ".snakemake")
    )
    assert "snakemake --unlock" in str(refused.value)
    assert len(records(workdir / "results" / "s" / "runs")) == 4
    persistence._delete_locks()  # the workflow ended
    main(["s", "--point", "t2"], workdir)
    assert records(workdir / "results" / "s" / "runs") == ["t1/rep1.json", "t1/rep2.json"]


@pytest.mark.skipif(
    subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0,
    reason="no mount namespace here (unshare -m needs root)",
)
def test_a_read_only_results_folder_is_named_in_one_line(workdir):
    # the fault probe: `make redo` on a read-only results/ printed a traceback
    # (OSError: Read-only file system); it is mounted read-only in a namespace of its own
    results = workdir / "results"
    redo = f"{sys.executable} -m scalestudy.redo s --point t1"
    mounted = f"mount --bind {results} {results} && mount -o remount,ro,bind {results} && {redo}"
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", mounted],
        cwd=workdir,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "redo: cannot move the records aside (Read-only file system: results/s/discarded): "
        "make results/ writable, then run make redo again"
    ]
    assert records(results) == [
        "s/runs/t1/rep1.json",
        "s/runs/t1/rep2.json",
        "s/runs/t2/rep1.json",
        "s/runs/t2/rep2.json",
    ]
