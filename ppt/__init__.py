"""ppt: keep private text out of prompts sent to black-box LLMs."""

__version__ = "0.1.0"
