"""Which tests hold each of coord's promises (the numbered list of ``INVARIANTS.md``, kept
beside the project; docs/landing.md, "From claim to main", says 16 to 20 in words).

``HELD_BY`` maps a promise to the tests that would fail if it broke. This test keeps the map
true: every test it names exists (a renamed or deleted test fails here, so a promise cannot
lose its last assertion unnoticed), and every promise of the landing flow has one at each
level the promise spans (the board's rule, the git side, the whole flow with real
processes). Promises 1 to 15 and 21 are not yet mapped here.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

HELD_BY: dict[int, tuple[str, ...]] = {
    # main moves only by compare-and-set from the tip that was checked
    16: (
        "test_landing_git.py::test_a_branch_lands_by_compare_and_set",
        "test_landing_git.py::test_a_human_commit_during_the_check_makes_it_start_again",
        "test_landing_flow.py::test_main_moving_under_every_attempt_leaves_the_item_queued_and_waiting",
        "test_landing_flow.py::test_main_on_a_remote_is_moved_by_a_push_never_forced_and_a_lost_race_lands_again",
        "acceptance/test_plan_to_main.py::test_a_plan_of_twelve_packages_reaches_main_through_four_agents_in_worktrees",
        "test_landing_runner_faults.py::test_a_runner_killed_mid_check_is_replaced_at_once_and_main_moves_once",
        "test_landing_runner_faults.py::test_a_runner_killed_mid_rebase_is_replaced_by_the_daemon_and_main_moves_once",
        "test_landing_runner_faults.py::test_a_second_runner_never_takes_an_item_between_main_moved_and_merged",
        "test_landing_in_daemon.py::test_coord_land_beside_the_daemons_runner_lands_each_item_once",
    ),
    # a dependent is ready only once merged, and starts from a main that contains it
    17: (
        "test_landing_board.py::test_merged_is_done_frees_the_files_and_makes_dependents_ready",
        "test_landing_flow.py::test_a_submitted_item_lands_and_only_then_unblocks_its_dependent",
        "acceptance/test_plan_to_main.py::test_a_plan_of_twelve_packages_reaches_main_through_four_agents_in_worktrees",
    ),
    # no coord command deletes work that is neither on main nor in a snapshot
    18: (
        "test_landing_worktrees.py::test_remove_refuses_work_that_is_neither_on_main_nor_snapshotted",
        "test_claude_worktree_hooks.py::test_removing_a_worktree_with_work_in_it_keeps_it_and_the_claim",
        "test_landing_faults.py::test_an_agent_killed_mid_work_loses_nothing_and_its_files_stay_held",
        "test_start_cli.py::test_a_released_item_taken_by_next_again_goes_on_in_its_worktree",
    ),
    # only the head recorded at submit under the current token lands
    19: (
        "test_landing_git.py::test_a_zombie_commit_after_submit_never_lands",
        "test_landing_flow.py::test_a_zombies_commit_after_the_submit_never_reaches_main",
    ),
    # an item's files stay held from claim to merged or abandoned; never a second agent's
    20: (
        "test_landing_board.py::test_submit_queues_the_item_ends_the_lease_and_hands_the_files_to_the_queue",
        "test_landing_board.py::test_a_package_ticked_in_its_document_while_queued_stays_queued",
        "test_landing_lapsed.py::test_a_lapsed_worktree_claim_keeps_its_files_held_for_its_item",
        "test_landing_faults.py::test_agents_racing_for_a_lapsed_items_files_never_get_them_and_one_takes_it_over",
    ),
}


@functools.cache
def _tests_in(relative: str) -> frozenset[str]:
    tree = ast.parse((TESTS / relative).read_text(encoding="utf-8"))
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    )


@pytest.mark.parametrize("promise", sorted(HELD_BY))
def test_every_test_a_promise_names_exists(promise: int) -> None:
    missing = []
    for node in HELD_BY[promise]:
        relative, name = node.split("::")
        if not (TESTS / relative).is_file() or name not in _tests_in(relative):
            missing.append(node)
    assert not missing, f"promise {promise} names tests that are gone: {missing}"


def test_the_landing_promises_are_each_held() -> None:
    assert all(HELD_BY.get(n) for n in range(16, 21)), sorted(HELD_BY)


def test_a_test_that_is_gone_is_found_missing() -> None:
    """The check above, against a deliberate violation: a name no test file has."""
    assert "test_no_such_test" not in _tests_in("test_landing_git.py")
    assert "test_a_branch_lands_by_compare_and_set" in _tests_in("test_landing_git.py")
