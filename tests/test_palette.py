"""The course's colours come from one place, course_utils/palette.py, and they are Okabe & Ito's eight: the
modules and the notebooks' code name them (palette.BLUE) instead of writing their hex codes."""

import re
from pathlib import Path

import pytest

from course_utils import nbtools, palette

from conftest import ROOT

COURSE_UTILS = Path(palette.__file__).parent

# Okabe & Ito (2008), "Color Universal Design", in the order of their chart: written out here, not imported,
# so that a typo in palette.py shows up as a difference
OKABE_ITO = {
    "BLACK": "#000000",
    "ORANGE": "#E69F00",
    "SKY_BLUE": "#56B4E9",
    "GREEN": "#009E73",
    "YELLOW": "#F0E442",
    "BLUE": "#0072B2",
    "VERMILLION": "#D55E00",
    "PURPLE": "#CC79A7",
}
HEX_CODE = re.compile("|".join(OKABE_ITO.values()), re.IGNORECASE)  # #d55e00 is the same colour as #D55E00


def test_the_palette_is_exactly_okabe_and_itos_eight_in_their_order():
    assert palette.OKABE_ITO == tuple(OKABE_ITO.values())
    assert {name: getattr(palette, name) for name in OKABE_ITO} == OKABE_ITO


def test_no_module_but_the_palette_writes_an_okabe_ito_colour_as_hex():
    """A module names the colour (palette.BLUE), so that every figure changes together if the palette ever does."""
    hard_coded = [
        f"{path.relative_to(COURSE_UTILS.parent)}:{number}: {line.strip()}"
        for path in sorted(COURSE_UTILS.rglob("*.py"))
        if path != COURSE_UTILS / "palette.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if HEX_CODE.search(line)
    ]
    assert not hard_coded, "use the names of course_utils/palette.py instead:\n" + "\n".join(hard_coded)


def test_the_scan_finds_an_okabe_ito_colour_however_it_is_cased_and_no_other():
    assert HEX_CODE.search('ax.plot(x, color="#d55e00")')
    assert not HEX_CODE.search('ax.plot(x, color="#999999")')


@pytest.mark.parametrize("folder", ["chapters", "solutions"])
def test_no_notebook_writes_an_okabe_ito_colour_as_hex(folder):
    """The notebooks' code imports the names too (ja/ and exercises/ are generated from these)."""
    hard_coded = [
        f"{path.name} cell {cell.get('id')}: {line.strip()}"
        for path in sorted((ROOT / folder).glob("*.ipynb"))
        for cell in nbtools.read(path).cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if HEX_CODE.search(line)
    ]
    assert not hard_coded, "use the names of course_utils/palette.py instead:\n" + "\n".join(hard_coded)
