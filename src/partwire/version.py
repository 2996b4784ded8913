"""partwire's version, in a module of its own: what needs it imports it from here, never
from the package root (which re-exports everything, so importing it would point up)."""

__version__ = "0.1.0"
