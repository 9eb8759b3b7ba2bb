# A profiler trace of one point, when a study asks for it: an extra run (with the
# point's resources) whose times are not used. The launcher writes the record
# always and the trace when the profiled steps happened; the report links it.
use rule run_point as profile_point with:
    output:
        record="results/{study}/profile/{point}.json",
    log:
        "logs/{study}/profile/{point}.log",
    params:
        spec=get_run_spec,
        rerun_token="profile",
        python=PYTHON,
