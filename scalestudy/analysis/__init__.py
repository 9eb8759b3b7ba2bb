"""Head-node analysis: records to tables, statistics, scaling models, predictions, the
recommendation, cost, and every number the report shows (findings)."""
