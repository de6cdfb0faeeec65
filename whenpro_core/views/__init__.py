"""How a trace is shown and shared: the header, one step's row and body, step search, and HTML/Markdown export."""
