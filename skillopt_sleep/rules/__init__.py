"""Rules: whom a rule is for, what it contradicts, and how many a document holds."""
