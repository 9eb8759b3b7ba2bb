# Data sets are prepared once, on the machine running Snakemake, before any
# timed job: download and decompression never fall inside a measurement.
rule prepare_data:
    output:
        marker=f"{DATA_DIR}/{{dataset}}/ready.json",
    log:
        "logs/data/{dataset}.log",
    localrule: True
    params:
        sources=get_data_sources,
        root=get_dataset_root,
    script:
        "../scripts/prepare_data.py"
