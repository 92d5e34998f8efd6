"""Learning: one night's loop and its steps before the gate (reflect, rank, lookahead, train set)."""
