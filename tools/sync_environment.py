"""Rewrite environment.yml from requirements.txt, so conda users get exactly the pip pins.

Run it (or `make environment.yml`) after changing a pin; tests/test_pins.py fails while the two disagree.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pins(requirements_text):
    """The `name==version` lines of a requirements file, in order, without comments."""
    lines = (line.split("#", 1)[0].strip() for line in requirements_text.splitlines())
    return [line for line in lines if line]


def environment_yml(pin_lines):
    body = "\n".join(f"      - {pin}" for pin in pin_lines)
    return (
        "# Generated from requirements.txt by tools/sync_environment.py: do not edit by hand.\n"
        "# conda env create -f environment.yml && conda activate normalization-course && pip install -e . --no-deps\n"
        "name: normalization-course\n"
        "channels:\n"
        "  - conda-forge\n"
        "dependencies:\n"
        "  - python=3.11\n"
        "  - pip\n"
        "  - pip:\n"
        f"{body}\n"
    )


if __name__ == "__main__":
    text = environment_yml(pins((ROOT / "requirements.txt").read_text()))
    (ROOT / "environment.yml").write_text(text)
    print("environment.yml written")
