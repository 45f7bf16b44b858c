"""The app's screens, one pane each inside the tabbed content (switched with 1–6 or the palette)."""
