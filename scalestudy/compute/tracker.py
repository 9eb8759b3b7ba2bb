"""Optional experiment tracking with Comet, for rank 0 only (config/README.md, "Experiment
tracking"). comet_ml reads COMET_API_KEY itself: this module never reads, copies or prints
it. The tracker starts before the workload, so that Comet's system metrics cover the
training; its set-up falls into the run's start-up phase and wall time, never into epochs.
"""

import os
import sys


def start_tracker(spec: dict, rank: int, environ=os.environ):
    """A Comet experiment for this run, or None (no key, not rank 0, no comet_ml, a
    command's probe: no run of its study)."""
    if rank != 0 or not environ.get("COMET_API_KEY") or spec.get("probe"):
        return None
    try:
        import comet_ml
    except ImportError:
        print("COMET_API_KEY is set but comet_ml is not installed: not tracking", file=sys.stderr)
        return None
    # our own output is the job log; the command line and code are in the record
    options = {
        "project_name": spec["study"].lower(),
        "auto_output_logging": False,
        "log_code": False,
        "parse_args": False,
        "log_git_patch": False,
        "display_summary_level": 0,
    }
    try:
        offline = environ.get("COMET_OFFLINE_DIRECTORY")
        if offline:
            experiment = comet_ml.OfflineExperiment(offline_directory=offline, **options)
        else:
            experiment = comet_ml.Experiment(**options)
        experiment.set_name(f"{spec['study']}/{spec['point']}/rep{spec['repeat']}")
        experiment.log_parameters(spec["params"])
        experiment.log_parameters(spec["requested"], prefix="requested")
        experiment.log_other("point", spec["point"])
        experiment.log_other("n", spec["n"])
    except Exception as e:  # a tracker never fails a run
        print(f"Comet tracking failed to start ({type(e).__name__}): not tracking", file=sys.stderr)
        return None
    return experiment


def finish_tracker(experiment, phases: list[dict], metrics: dict, status: str) -> None:
    """Log the run's figures and close the experiment; errors are reported, not raised."""
    if experiment is None:
        return
    try:
        epochs = [p for p in phases if p["kind"] == "epoch"]
        for step, phase in enumerate(epochs, start=1):
            experiment.log_metric("epoch_s", phase["seconds"], step=step)
        experiment.log_metrics({k: v for k, v in metrics.items() if v is not None})
        experiment.log_other("status", status)
        experiment.end()
    except Exception as e:
        print(f"Comet tracking failed to finish ({type(e).__name__})", file=sys.stderr)
