"""The gate: which of a night's proposed rules it keeps, and on what evidence.

``decide`` holds the statistics (pure functions over per-task samples) and ``no_worse`` the test of
a removal; ``evaluator`` the val scores per document set, drawn on demand and shared by every
comparison; ``sampling`` one night's gates, drawing more samples while a verdict is uncertain;
``phases`` the night's edits gated one by one and combined; ``together`` the night's edits measured
together on the tasks they do not claim.
"""
