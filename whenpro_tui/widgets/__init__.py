"""One module per pane of the whenpro TUI."""
