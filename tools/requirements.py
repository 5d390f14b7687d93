#!/usr/bin/env python3
"""Print pinpath's requirements from pyproject.toml, one per line (standard library only).

Usage: tools/requirements.py [EXTRA,EXTRA...]   e.g.  tools/requirements.py test,cuda
"""
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
reqs = list(project["dependencies"])
for extra in filter(None, (sys.argv[1] if len(sys.argv) > 1 else "").split(",")):
    reqs += project["optional-dependencies"][extra]
print("\n".join(reqs))
