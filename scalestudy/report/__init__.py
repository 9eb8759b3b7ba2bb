"""The report: views that format what aggregation computed, the figures, and the
rendering of the HTML. It computes nothing and imports no analysis."""
