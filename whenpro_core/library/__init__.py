"""Finding traces: what a path names, filtering dataset listings, and the user's own coding-agent sessions."""
