"""MkDocs hook: the Specification section of the nav lists every file of spec/, in order.

The spec lives at the repository root (docs/spec is a symlink to it), and its sections
are numbered files; listing them here by hand would break the strict build each time a
section is added. The section's index (README.md) comes first.
"""

from __future__ import annotations

from pathlib import Path

SECTION = "Specification"


def on_config(config, **kwargs):
    spec = Path(config["docs_dir"]) / "spec"
    pages = sorted(p.name for p in spec.glob("*.md") if p.name != "README.md")
    entries = ["spec/README.md", *(f"spec/{name}" for name in pages)]
    for item in config["nav"] or []:
        if isinstance(item, dict) and SECTION in item:
            item[SECTION] = entries
    return config
