"""The app's screens, one pane each inside the tabbed content (switched with 1–7 or the palette)."""
