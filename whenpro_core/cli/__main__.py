"""``python -m whenpro_core.cli``: the same as the ``whenpro`` command."""

from whenpro_core.cli.app import main

if __name__ == "__main__":
    main()
