"""sysprof-tui: the Textual app. Never imports torch; runs happen in the runner subprocess."""
