"""Report: what a person reads about a night (markdown, html, notices, trend)."""
