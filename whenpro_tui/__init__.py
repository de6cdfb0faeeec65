"""whenpro TUI: the Textual trace debugger. Holds no domain logic (DESIGN §1)."""
