"""Documents: the managed block a night writes, the hand-written text around it, and where it may live."""
