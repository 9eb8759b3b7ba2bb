"""The status-check interval from earlier records (scalestudy.analysis.cluster.polling):
the plugin's schedule as its source has it, and the profile lines for made-up runs."""

import csv
from datetime import datetime

from scalestudy.analysis.cluster import polling


def write_runs(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def slurm_row(submit: str, finished: str) -> dict:
    """Slurm's submit time is local and naive, the launcher's end carries its zone."""
    end = datetime.fromisoformat(finished).astimezone().isoformat()
    return {"slurm_submit_time": submit, "finished_at": end, "elapsed_s": "1.0"}


def test_checks_after_a_reset_grow_by_ten_seconds_up_to_180():
    assert polling.check_times(2, 40) == [2, 14, 36, 68]
    times = polling.check_times(1, 5000)
    gaps = [b - a for a, b in zip([0, *times], times, strict=False)]
    assert gaps[:3] == [1, 11, 21] and max(gaps) == 180 and gaps[-1] == 180
    # a job is seen at the first check at or after its end
    assert polling.seen_at(14, 2) == 14 and polling.seen_at(14.5, 2) == 36


def test_durations_from_slurm_submission_to_the_launchers_end(tmp_path):
    runs = write_runs(
        tmp_path / "runs.csv",
        [
            slurm_row("2026-01-05T10:00:00", "2026-01-05T10:00:26"),
            {"slurm_submit_time": "", "finished_at": "", "elapsed_s": "30.5"},  # local run
        ],
    )
    assert polling.job_durations(runs) == [26.0, 30.5]


def test_runs_that_shared_a_job_are_one_job_that_ends_with_its_last_run(tmp_path):
    """Packed repeats (submission.pack_repeats): one submission, seen when its last run
    ends."""
    rows = [
        slurm_row("2026-01-05T10:00:00", f"2026-01-05T10:00:{end}") | {"slurm_job_id": job}
        for job, end in (("7", "20"), ("7", "41"), ("7", "30"), ("8", "26"))
    ]
    assert polling.job_durations(write_runs(tmp_path / "runs.csv", rows)) == [41.0, 26.0]


def test_the_interval_fits_the_runs_and_the_profile_lines_say_so(tmp_path, capsys):
    # 26 s jobs: an interval of 9 checks at 9 and 28 s, just after them; 40 (the
    # plugin's default) would see them 14 s late, 2 only at 36 s
    study = tmp_path / "study"
    study.mkdir()
    write_runs(
        study / "runs.csv",
        [slurm_row(f"2026-01-05T10:{m:02d}:00", f"2026-01-05T10:{m:02d}:26") for m in range(4)],
    )
    assert polling.main([str(study)]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(": ") for line in out.splitlines() if line and not line.startswith("#"))
    init = int(lines["slurm-init-seconds-before-status-checks"])
    assert lines["seconds-between-status-checks"] == str(init)
    durations = [26.0] * 4
    assert polling.lost(durations, init, 0.05)[0] < min(
        polling.lost(durations, other, 0.05)[0] for other in (2, 10, 40)
    )
    assert "4 jobs took 26-26 s" in out
    assert polling.seen_at(26 * 1.05, init) - 26 < 5  # seen within 5 s even 5 % later


def test_squeue_sites_keep_the_interval_below_a_third_of_min_job_age(tmp_path, capsys):
    runs = write_runs(
        tmp_path / "runs.csv", [slurm_row("2026-01-05T10:00:00", "2026-01-05T12:00:00")]
    )
    assert polling.main([str(runs), "--min-job-age", "60"]) == 0
    out = capsys.readouterr().out
    assert int(out.split("slurm-init-seconds-before-status-checks: ")[1].split()[0]) <= 20


def test_no_records_is_an_error(tmp_path, capsys):
    assert polling.main([str(tmp_path)]) == 2
    assert "no runs table" in capsys.readouterr().err
