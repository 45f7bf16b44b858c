from sysprof.tui.app import entry_point

entry_point()
