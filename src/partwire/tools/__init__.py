"""Tools the model can call: the Tool type, its context, the registry, the built-ins."""
