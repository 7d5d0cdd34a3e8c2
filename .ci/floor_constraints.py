"""Print a pip constraints file pinning each dependency of pyproject.toml to its floor."""

from __future__ import annotations

import re
import sys
import tomllib

FLOOR = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?>=([0-9][^,;\s]*)")


def main(path: str) -> None:
    with open(path, "rb") as file:
        deps = tomllib.load(file)["project"]["dependencies"]
    for dep in deps:
        found = FLOOR.match(dep)
        if found:
            print(f"{found.group(1)}=={found.group(3)}")


if __name__ == "__main__":
    main(sys.argv[1])
