"""Keyboard only, labelled controls, and a phone-width screen (390 x 844) without sideways scrolling."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.browser.conftest import KEYS, PHONE, UiServer, Visitor

pytestmark = pytest.mark.browser

Visit = Callable[..., Visitor]
MAX_TABS = 40


def tab_to(person: Visitor, selector: str) -> None:
    """Press Tab until the focused element matches `selector` (fails after MAX_TABS presses)."""
    for _ in range(MAX_TABS):
        if person.page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return  # already there (e.g. autofocus)
        person.page.keyboard.press("Tab")
    focused = person.page.evaluate("document.activeElement?.outerHTML")
    raise AssertionError(f"Tab never reached {selector}; focus is on {focused}")


def unlabelled_controls(person: Visitor) -> list[str]:
    """Visible inputs, selects and textareas with neither a <label> nor an aria-label."""
    result: list[str] = person.page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea')]
            .filter(e => e.type !== 'hidden' && e.type !== 'submit')
            .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                         && !e.getAttribute('aria-labelledby'))
            .map(e => e.outerHTML)"""
    )
    return result


def test_sign_in_search_and_open_a_memory_with_the_keyboard_only(visitor: Visit, ui: UiServer) -> None:
    memory_id = ui.write("alice", "Keyboard users prefer the dvorak layout on laptops")
    person = visitor()
    person.goto("/ui/login")
    assert unlabelled_controls(person) == []
    tab_to(person, "#api_key")
    person.page.keyboard.type(KEYS["alice"])
    person.page.keyboard.press("Enter")
    person.page.wait_for_url(re.compile(r".*/ui/memories.*"))

    tab_to(person, "a[href*='/ui/search']")
    person.page.keyboard.press("Enter")
    person.page.wait_for_url(re.compile(r".*/ui/search.*"))
    assert unlabelled_controls(person) == []
    tab_to(person, "#q")
    person.page.keyboard.type("dvorak layout laptops")
    person.page.keyboard.press("Enter")
    person.page.wait_for_selector("#results li.hit")
    tab_to(person, f"li.hit[data-memory-id='{memory_id}'] a.memory-link")
    person.page.keyboard.press("Enter")
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{memory_id}(\?.*)?$"))
    assert unlabelled_controls(person) == []
    tab_to(person, "#edit-content")  # the correction forms are reachable too


def test_no_sideways_scrolling_at_phone_width(visitor: Visit, ui: UiServer) -> None:
    memory_id = ui.write(
        "alice",
        "A long unbroken token that must wrap on a phone: " + "x" * 300,
        tags=["phone-width-check", "another-rather-long-tag-name"],
    )
    person = visitor(viewport=PHONE)

    def assert_fits(path: str) -> None:
        person.goto(path)
        scroll_width, inner_width = person.page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert inner_width == PHONE["width"]
        assert scroll_width <= inner_width, (path, scroll_width, inner_width)

    assert_fits("/ui/login")
    person.login("alice")
    for path in ("/ui/memories", "/ui/search?q=long+unbroken+token+phone", f"/ui/memories/{memory_id}"):
        assert_fits(path)
