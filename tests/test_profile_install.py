"""`snakemake --profile slurm` as users type it: `make slurm-profile` links the shipped
profile into the user's Snakemake config folder, and says what it did."""

import subprocess

from tests.conftest import REPO
from tests.test_workflow import MEASURED


def make_profile(config_home):
    return subprocess.run(
        ["make", "-s", "slurm-profile", f"XDG_CONFIG_HOME={config_home}"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip


def test_plain_profile_name_works_after_make_slurm_profile(workflow, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    workflow.write_config({"studies": {"published": MEASURED}})
    before = workflow.snakemake("-n", "--profile", "slurm", check=False)
    assert before.returncode != 0 and "profile directory given (slurm)" in before.output

    proc = make_profile(tmp_path / "config")
    link = tmp_path / "config" / "snakemake" / "slurm"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"linked {link} -> {REPO}/profiles/slurm" in proc.stdout
    assert link.resolve() == REPO / "profiles" / "slurm"
    after = workflow.snakemake("-n", "--profile", "slurm")
    assert "aggregate_study" in after.output
    assert make_profile(tmp_path / "config").returncode == 0  # again: still the same link


def test_an_existing_slurm_profile_is_left_alone(tmp_path):
    own = tmp_path / "config" / "snakemake" / "slurm"
    own.mkdir(parents=True)
    (own / "config.yaml").write_text("executor: slurm\n")
    proc = make_profile(tmp_path / "config")
    assert proc.returncode != 0
    assert "exists and is not a link: left alone" in proc.stdout
    assert (own / "config.yaml").read_text() == "executor: slurm\n"
