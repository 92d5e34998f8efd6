"""Report: what a person reads about a night (the proposal, markdown, html, the score trend)."""
