"""Code that runs on compute nodes: the launcher, the worker and the harness that
times a workload, and what they use. It never imports the analysis or the report
(tests/test_architecture.py), so a job starts light."""
