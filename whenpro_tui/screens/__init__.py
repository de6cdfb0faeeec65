"""One module per screen of the whenpro TUI."""
