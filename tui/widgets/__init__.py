"""Widgets of the app's own: tables that mark and export, the modals, the file picker for a factory."""
