"""Staging: a night's proposal staged for review, adopted, reverted, with its journal."""
