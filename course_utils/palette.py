"""The course's colours: the Okabe-Ito palette, under names that say which colour each one is.

Okabe & Ito (2008, "Color Universal Design: how to make figures and presentations that are friendly
to colorblind people") chose eight colours that readers with the common kinds of colour blindness
(red-green above all) still tell apart. Every figure of the course takes its colours from here, so
that one line of a chapter and the same line in a later chapter look alike.

Colour alone still carries no meaning in these figures: lines that must be told apart also differ by
marker, hatch or line style, so that a reader who cannot see a colour (or reads a grey printout)
loses nothing.

The modules keep their own role maps (which colour is LayerNorm, which one is the baseline run), built
from the names below; a colour used by a single figure only (a light tint for a background) stays in
that module, next to a comment that says why it is not an Okabe-Ito colour.
"""

from __future__ import annotations

BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
GREEN = "#009E73"  # Okabe & Ito call it "bluish green"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"  # Okabe & Ito call it "reddish purple"

OKABE_ITO = (BLACK, ORANGE, SKY_BLUE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE)
"""The eight colours in the order of Okabe & Ito's own chart."""

DARK_GREY = "#555555"
"""Not an Okabe-Ito colour: the outlines and wires of the diagrams, darker than any fill they surround."""

__all__ = ["BLACK", "ORANGE", "SKY_BLUE", "GREEN", "YELLOW", "BLUE", "VERMILLION", "PURPLE", "OKABE_ITO", "DARK_GREY"]
