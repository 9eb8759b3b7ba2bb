# Data sets are prepared once, on the machine running Snakemake, before any
# timed job: download and decompression never fall inside a measurement.
rule prepare_data:
    output:
        marker=f"{DATA_DIR}/{{dataset}}/ready.json",
    params:
        sources=get_data_sources,
        root=lambda wildcards: f"{DATA_DIR}/{wildcards.dataset}",
    log:
        "logs/data/{dataset}.log",
    localrule: True
    script:
        "../scripts/prepare_data.py"
