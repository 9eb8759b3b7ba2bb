"""Write the workload parameter tables of config/README.md from the declarations.

    python -m workloads [--check] [README]

README defaults to config/README.md of this checkout. With --check nothing is
written; the exit status is 1 when the file differs from what would be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workloads import FOLDER, discover, readme_with_tables


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", nargs="?", default=FOLDER.parent / "config" / "README.md")
    parser.add_argument("--check", action="store_true", help="only say whether it is current")
    args = parser.parse_args(argv)
    path = Path(args.readme)
    text = path.read_text(encoding="utf-8")
    new = readme_with_tables(text, discover(FOLDER))
    if new == text:
        print(f"{path}: the workload tables are current")
        return 0
    if args.check:
        print(f"{path}: the workload tables differ from the declarations; run python -m workloads")
        return 1
    path.write_text(new, encoding="utf-8")
    print(f"{path}: wrote the workload tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
