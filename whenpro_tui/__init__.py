"""whenpro TUI: the Textual trace debugger. Holds no domain logic (docs/architecture.md, 'Data flow')."""
