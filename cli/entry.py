"""The `ratchet` command: `ratchet sql` over an unchanged local store answers on the light
path (``cli.sql_fast``, DuckDB only); everything else is the full CLI (``cli.main``)."""

from __future__ import annotations

import sys


def main() -> None:
    from cli.sql_fast import run

    if run(sys.argv[1:]):
        return
    from cli.main import app

    app()


if __name__ == "__main__":
    main()
