"""Moving between the app's panes: showing one (built on first show), cycling, focusing the shown one, and the
command palette's entries for every key. Mixed into the App."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from sysprof.tui.keys import GLOBAL_KEYS, PANE_KEYS, PANES
from sysprof.tui.panes.base import Pane

if TYPE_CHECKING:
    from textual.app import App

    class _PaneHost(App):
        """What the mixin uses of the App it is mixed into."""

        pane_factories: dict[str, Callable[[], Pane]]
        focus_pending: bool
else:
    _PaneHost = object


class PaneNavigation(_PaneHost):
    """Mixed into the App: needs pane_factories (pane name → its maker) and a focus_pending flag."""

    pane_switches = 0  # by keys, commands and the app (not tab clicks): what a deferred switch checks

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key in GLOBAL_KEYS:
            yield SystemCommand(key.label, f"{key.help or key.label} [{key.keys}]", self.action_callback(key.action))
        for key in PANE_KEYS:
            for scope in key.scope.split(", "):
                yield SystemCommand(f"{scope}: {key.label}", f"{key.help} [{key.keys}]",
                                    self.pane_callback(scope.lower(), key.action))

    def action_callback(self, action: str) -> Callable[[], None]:
        return lambda: self.call_next(self.run_action, action)

    def pane_callback(self, pane: str, action: str) -> Callable[[], None]:
        def run() -> None:
            self.action_show_pane(pane)
            self.call_next(self.action_pane, action)
        return run

    def current_pane(self) -> Pane | None:
        """The visible pane; None while a modal is up, the app is being torn down or the pane is being built."""
        if not self.screen_stack:  # a tab event can arrive after the last screen left
            return None
        tabs = self.screen.query("#panes")
        panes = self.screen.query(f"#pane-{tabs.first(TabbedContent).active}") if tabs else None
        return panes.first(Pane) if panes else None

    def shown_pane_name(self) -> str | None:
        tabs = self.screen.query("#panes") if self.screen_stack else None
        return tabs.first(TabbedContent).active if tabs else None

    def show_pane_unless_moved(self, pane: str, switches_then: int) -> None:
        """A switch deferred to after a refresh: a pane chosen since switches_then was counted (a key pressed
        first, even before the app read the message that asked for this switch) stays."""
        if self.pane_switches == switches_then:
            self.action_show_pane(pane)

    def action_show_pane(self, pane: str) -> None:
        tabs = self.screen.query("#panes")
        if pane in PANES and tabs and tabs.first(TabbedContent).active != pane:
            self.pane_switches += 1
            self.build_pane(tabs.first(TabbedContent).get_pane(pane))
            # A focused widget that is hidden hands focus to a sibling in its own pane, which switches the tabs
            # back (TabbedContent follows focus): let go of it first; pane_shown focuses the new pane.
            self.screen.set_focus(None)
            tabs.first(TabbedContent).active = pane

    def action_cycle_pane(self, step: int) -> None:
        tabs = self.screen.query("#panes")
        if tabs:
            current = PANES.index(tabs.first(TabbedContent).active)
            self.action_show_pane(PANES[(current + step) % len(PANES)])

    def build_pane(self, tab: TabPane | None) -> None:
        """Mount a pane's content the first time it is shown; before the switch, so focus has a place to go."""
        if tab is not None and not tab.children and tab.id in self.pane_factories:
            tab.mount(self.pane_factories[tab.id]())

    def focus_if_still_shown(self, pane: Pane) -> None:
        """Focusing a pane that was left meanwhile would switch back to it (TabbedContent follows focus),
        and two panes doing that to each other flip the tabs back and forth."""
        self.focus_pending = False
        if self.current_pane() is pane:
            pane.focus_main()

    def action_pane(self, action: str) -> None:
        pane = self.current_pane()
        if pane is not None and hasattr(pane, f"action_{action}"):
            self.call_next(pane.run_action, action)

    def action_leave_field(self) -> None:
        self.screen.set_focus(None)
