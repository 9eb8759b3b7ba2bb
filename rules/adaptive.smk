# An adaptive study runs in rounds. The plan of round R (a checkpoint) reads the
# records of the rounds before it and says how many runs each point should have once
# round R is done, or why the study stops. Its runs are then ordinary run_point jobs,
# and the plan of round R+1 waits for them (get_round_records). Plans only add runs:
# a rerun, a raised budget or a tighter target continue from what exists. A round that
# ran is history: its file is kept as it is (its inputs are ancient, its params the
# config it was planned under: get_round_config), whatever changes after it (the
# config, the analysis code, a record redone); a changed config plans new rounds from
# the runs that exist (adaptive_rounds).
checkpoint adaptive_round:
    input:
        previous=get_previous_round,
        records=get_round_records,
        baseline=get_round_baseline,
        code=[ancient(path) for path in CODE["analysis"]],
    output:
        plan=paths.ROUND,
    log:
        "logs/{study}/rounds/round{round}.log",
    localrule: True
    params:
        study=get_round_config,
    script:
        "../scripts/adaptive_round.py"
