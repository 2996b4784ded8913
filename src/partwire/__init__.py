"""partwire: model streams become typed, persistent, live conversation parts."""

__version__ = "0.1.0"
