from scalestudy.compute.data import PREPARED_FILES


# Data sets are prepared once, on the machine running Snakemake, before any
# timed job: download, decompression and normalisation never fall inside a
# measurement; a run maps the prepared tensor files into memory.
rule prepare_data:
    output:
        prepared=[f"{DATA_DIR}/{{dataset}}/{name}" for name in PREPARED_FILES.values()],
        marker=f"{DATA_DIR}/{{dataset}}/ready.json",
    log:
        "logs/data/{dataset}.log",
    localrule: True
    params:
        sources=get_data_sources,
        root=get_dataset_root,
    script:
        "../scripts/prepare_data.py"
