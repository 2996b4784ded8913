"""Model providers: the LanguageModel protocol, normalized stream events, the demo model."""
