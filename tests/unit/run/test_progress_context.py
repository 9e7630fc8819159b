"""The stall detector and the context budget, unit by unit, pinned tightly enough that
the mutants mutmut made of them die (bench/mutation.py): the window forgets, the
fingerprint is taken only for a repeat, long calls are shortened in the reason; token
estimates, the elision marker, the four newest messages kept, elision from the oldest
and no further than needed."""

from __future__ import annotations

from harness_core import Message, Role, ToolCall, ToolResult
from harness_core.run._context import ELIDE_TO, ContextBudget, estimate_tokens
from harness_core.run._progress import Progress


class Prints:
    """A workspace fingerprint that never changes, counting how often it is taken."""

    def __init__(self) -> None:
        self.taken = 0

    def __call__(self) -> str:
        self.taken += 1
        return "same"


def test_the_window_forgets_calls_that_fell_out_of_it() -> None:
    progress = Progress(3, Prints())
    # A comes back every third call: each earlier A has left the 3-call window
    assert [progress.observe(k) for k in "AbcAdeAfgA"] == [None] * 10


def test_a_call_repeated_three_times_within_the_window_stalls() -> None:
    progress = Progress(6, Prints())
    seen = [progress.observe(k) for k in "AbAcA"]
    assert seen[:4] == [None] * 4
    assert seen[4] == ("stalled: the workspace did not change while A repeated 3 times"
                       " within the last 6 calls")


def test_two_repeats_within_the_window_are_not_yet_a_stall() -> None:
    progress = Progress(6, Prints())
    assert [progress.observe(k) for k in "AbAc"] == [None] * 4


def test_the_fingerprint_is_taken_only_when_a_call_repeats() -> None:
    prints = Prints()
    progress = Progress(5, prints)
    for key in "abcd":
        progress.observe(key)
    assert prints.taken == 0
    progress.observe("a")
    assert prints.taken == 1


def test_a_window_below_two_is_two() -> None:
    assert Progress(1, Prints()).window == 2
    assert Progress(2, Prints()).window == 2
    progress = Progress(2, Prints())
    assert progress.observe("x") is None
    assert progress.observe("x") == "stalled: the same call repeated 2 times in a row: x"


def test_bare_repetition_counts_from_the_first_call() -> None:
    progress = Progress(3, lambda: str(object()))  # the workspace changes every time
    assert [progress.observe("x") for _ in range(3)] == [
        None, None, "stalled: the same call repeated 3 times in a row: x"]
    other = Progress(3, lambda: str(object()))
    assert [other.observe(k) for k in ["", "", ""]][2] is not None  # even an empty key


def test_a_long_call_is_shortened_in_the_reason() -> None:
    key = "exec:" + "y" * 300
    progress = Progress(2, Prints())
    progress.observe(key)
    reason = progress.observe(key)
    assert reason == f"stalled: the same call repeated 2 times in a row: {key[:157]}..."
    short = "z" * 160
    progress = Progress(2, Prints())
    progress.observe(short)
    assert progress.observe(short) == f"stalled: the same call repeated 2 times in a row: {short}"


def test_token_estimates_are_four_characters_a_token_plus_four() -> None:
    assert estimate_tokens(Message.user("x" * 40)) == 14
    assert estimate_tokens(Message.user("x" * 43)) == 14
    assert estimate_tokens(Message.user("")) == 4
    call = ToolCall("c1", "abc", {"k": "v"})  # 3 + len("{'k': 'v'}") = 13 characters
    assert estimate_tokens(Message.assistant("", (call,))) == 7
    assert estimate_tokens(Message.assistant("1234", (call, call))) == 4 + (4 + 26) // 4


def _tool(i: int, size: int = 400) -> Message:
    return Message.tool(ToolResult(f"call{i}", "read_file", str(i) * size))


def test_the_marker_says_what_was_elided_and_how_to_see_it() -> None:
    budget = ContextBudget(60)
    budget.extend([_tool(0), *[Message.user("u") for _ in range(4)]])
    first = budget.view()[0]
    assert first.role is Role.TOOL and first.tool_call_id == "call0" and first.name == "read_file"
    assert first.content == ("[observation of read_file call call0 elided to fit the context"
                             " budget (400 chars); call the tool again to see it]")


def test_elision_starts_at_the_oldest_goes_down_to_a_share_and_spares_the_newest_four(
) -> None:
    messages = [Message.user("goal"), *[_tool(i) for i in range(8)]]
    whole = sum(estimate_tokens(m) for m in messages)
    budget = ContextBudget(whole - 140)  # 2 markers' worth over the ceiling
    budget.extend(messages)
    view = budget.view()
    elided = [i for i, m in enumerate(view) if "elided to fit" in m.content]
    # A block: the oldest observations, until the view is under ELIDE_TO of the ceiling
    # (or only the newest four are left), so the next steps need no elision at all.
    assert elided == list(range(1, len(elided) + 1)) and len(elided) > 2
    assert budget.elided_count == len(elided)
    size = sum(estimate_tokens(m) for m in view)
    assert size <= ELIDE_TO * budget.max_tokens or elided == [1, 2, 3, 4]  # type: ignore[operator]
    tight = ContextBudget(1)
    tight.extend(messages)
    seen = tight.view()
    assert [i for i, m in enumerate(seen) if "elided to fit" in m.content] == [1, 2, 3, 4]
    assert seen[0].content == "goal" and all(m.content.startswith(str(i - 1))
                                              for i, m in enumerate(seen) if i >= 5)


def test_a_view_under_the_ceiling_after_a_block_needs_no_elision_for_a_while() -> None:
    messages = [_tool(i) for i in range(40)]
    budget = ContextBudget(sum(estimate_tokens(m) for m in messages[:20]))
    budget.extend(messages[:21])
    first = budget.view()
    count = budget.elided_count
    assert count > 1
    budget.append(messages[21])
    assert budget.view()[: len(first) - 4] == first[: len(first) - 4]
    assert budget.elided_count == count  # the block made room: nothing more this step


def test_no_ceiling_and_a_small_conversation_are_left_alone() -> None:
    messages = [_tool(i) for i in range(6)]
    for ceiling in (None, 10_000):
        budget = ContextBudget(ceiling)
        budget.extend(messages)
        assert budget.view() == tuple(messages) and budget.elided_count == 0


def test_a_key_of_161_characters_is_shortened() -> None:
    key = "k" * 161
    progress = Progress(2, Prints())
    progress.observe(key)
    assert progress.observe(key) == (
        f"stalled: the same call repeated 2 times in a row: {key[:157]}...")


def test_a_conversation_exactly_at_the_ceiling_is_not_elided() -> None:
    messages = [_tool(i) for i in range(6)]
    budget = ContextBudget(sum(estimate_tokens(m) for m in messages))
    budget.extend(messages)
    assert budget.view() == tuple(messages)


def test_elision_stops_as_soon_as_the_view_is_at_its_target() -> None:
    messages = [_tool(0, 4000), *[_tool(i, 40) for i in range(1, 9)]]
    total = sum(estimate_tokens(m) for m in messages)
    budget = ContextBudget(total - 1)
    budget.extend(messages)
    assert [i for i, m in enumerate(budget.view()) if "elided" in m.content] == [0]
    assert sum(estimate_tokens(m) for m in budget.view()) <= ELIDE_TO * (total - 1)


def test_the_marker_keeps_the_error_flag_and_names_an_unnamed_tool() -> None:
    failed = Message(Role.TOOL, "boom " * 100, (), "c9", None, True)
    budget = ContextBudget(1)
    budget.extend([failed, *[Message.user("u") for _ in range(4)]])
    marker = budget.view()[0]
    assert marker.is_error is True
    assert marker.content.startswith("[observation of a tool call c9 elided")


def test_an_elided_message_is_the_same_marker_object_in_every_later_view() -> None:
    """The providers encode a message once per object: a marker made afresh for every
    view would be encoded again at every step of a long run."""
    budget = ContextBudget(60)
    budget.extend([_tool(0), *[Message.user("u") for _ in range(4)]])
    first = budget.view()
    budget.append(Message.user("more"))
    second = budget.view()
    assert "elided to fit" in first[0].content
    assert second[0] is first[0] and second[1:5] == first[1:5]
    assert budget.messages[0].content.startswith("0")  # the budget's own list keeps the original


def test_a_replayed_trail_judges_the_next_call_as_the_live_detector_does() -> None:
    live = Progress(4, Prints())
    trail = []
    for key in "bAA":
        assert live.observe(key) is None
        trail.append((key, live.last_mark))
    assert trail == [("b", ""), ("A", ""), ("A", "same")]  # a print only for a repeat
    resumed = Progress(4, Prints())
    resumed.replay(trail)
    expected = live.observe("A")
    assert expected is not None and resumed.observe("A") == expected
    fresh = Progress(4, Prints())
    fresh.replay([])
    assert fresh.observe("A") is None  # negative control: no trail, no stall


def test_a_replayed_run_of_one_call_counts_towards_bare_repetition() -> None:
    resumed = Progress(3, lambda: str(object()))  # the workspace changes every time
    resumed.replay([("x", ""), ("x", "p1")])
    assert resumed.observe("x") == "stalled: the same call repeated 3 times in a row: x"
