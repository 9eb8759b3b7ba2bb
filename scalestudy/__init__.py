"""The scaling-study workflow's code, in three layers and what they share:

- compute/: runs on compute nodes (launcher, worker, harness and what they use);
- analysis/: the head node's analysis of the records (tables, statistics, models,
  predictions, cost, the request, every number the report shows);
- report/: formats and draws what the analysis computed;
- shared, here: the study model (model.py), the config's studies and points
  (study/, a module a topic), records and their paths (records.py, paths.py), redo.py,
  and what analysis.json holds, typed, between the analysis and the report (contract.py).

Rules call it through thin scripts in scripts/; tests/test_architecture.py keeps the
layers apart."""
