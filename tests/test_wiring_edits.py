"""How `coord init` edits a file it does not own, one mechanism at a time, in process.

tests/test_wiring.py runs the real CLI over whole repositories; these pin the rules each of
those runs rests on: the user's JSON keeps its keys and their order, an entry the user wrote
is never taken for coord's, a block is replaced where it stands, and a `--command` with spaces
is read the way the user meant it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coord.errors import InvalidInput
from coord.wiring import json_merge, text_blocks
from coord.wiring.command import command_words
from coord.wiring.json_merge import JsonSpec
from coord.wiring.plan import Plan
from coord.wiring.shared_shapes import hook_entries, hook_line, mcp_server_entry
from coord.wiring.text_blocks import BlockSpec

CLAUDE_EVENTS: dict[str, str | None] = {"PreToolUse": "Edit|Bash", "Stop": None}


def claude_spec() -> JsonSpec:
    return JsonSpec([mcp_server_entry(["coord"]), *hook_entries("claude", CLAUDE_EVENTS, "coord")])


# --- JSON -----------------------------------------------------------------------------------


def test_merge_keeps_the_users_keys_in_their_order_and_adds_ours_after_them() -> None:
    raw = '{"z": 1, "mcpServers": {"b": {"command": "b"}, "a": {"command": "a"}}, "é": [3, 1]}'
    plan = Plan()
    after, meta = json_merge.merge("x.json", raw.encode(), claude_spec(), None, plan)
    assert after is not None and meta is not None
    text = after.decode("utf-8")
    data = json.loads(text)
    assert list(data) == ["z", "mcpServers", "é", "hooks"]
    assert list(data["mcpServers"]) == ["b", "a", "coord"]
    assert data["é"] == [3, 1]
    assert text == json.dumps(data, indent=2, ensure_ascii=False) + "\n"  # "é", not "\u00e9"
    assert plan.warnings == []
    # what init made is recorded, so that uninstall can take exactly that out again
    assert set(meta["entries"]) == {"mcp", "hook:PreToolUse", "hook:Stop"}
    assert meta["created_keys"] == [["hooks"], ["hooks", "PreToolUse"], ["hooks", "Stop"]]


def test_an_entry_the_user_wrote_like_ours_is_not_taken_for_coords() -> None:
    """Uninstall removes what init recorded: the user's own wiring must never be recorded."""
    # the very lines init writes (a hand-wired bare `coord hook` is not ours: ours is added)
    pre_tool_use = hook_line("coord", "claude", "PreToolUse", guard=True)
    stop = hook_line("coord", "claude", "Stop", guard=False)
    users = {
        "mcpServers": {"coord": {"command": "coord", "args": ["mcp"]}},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",  # another matcher, the same command: already wired
                    "hooks": [{"type": "command", "command": pre_tool_use}],
                }
            ],
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "notify"},
                        {"type": "command", "command": stop},
                    ]
                }
            ],
        },
    }
    raw = json.dumps(users, indent=4).encode()  # not coord's formatting: must stay as it is
    after, meta = json_merge.merge("x.json", raw, claude_spec(), None, Plan())
    assert after == raw
    assert meta is None


def test_a_member_named_like_ours_but_different_is_left_with_a_warning() -> None:
    raw = b'{"mcpServers": {"coord": {"command": "/opt/fork"}}}'
    plan = Plan()
    spec = JsonSpec([mcp_server_entry(["coord"])])
    after, meta = json_merge.merge(".mcp.json", raw, spec, None, plan)
    assert after == raw and meta is None
    assert plan.warnings == [
        ".mcp.json: left `mcpServers.coord` as it is (it is not coord's); remove it and run "
        "`coord init` again to have coord's"
    ]


def test_remove_takes_only_coords_hook_out_of_a_group_the_user_added_to() -> None:
    after, meta = json_merge.merge("x.json", None, claude_spec(), None, Plan())
    assert after is not None and meta is not None
    data = json.loads(after)
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "notify"})
    data["theme"] = "dark"
    edited = json_merge.dump(data)

    left, empty = json_merge.remove("x.json", edited, meta)
    assert json.loads(left) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]},
        "theme": "dark",
    }
    assert not empty
    # untouched since init: nothing else is left, the created file can go
    assert json_merge.remove("x.json", after, meta) == (b"{}\n", True)


# --- marked text blocks ---------------------------------------------------------------------


def indented(body: str) -> BlockSpec:
    return BlockSpec("hash", lambda indent: " " * indent + body)


def test_a_block_is_replaced_where_it_stands_at_its_indentation() -> None:
    old = (
        "first: 1\n"
        "list:\n"
        "    # coord:begin (an older release's words)\n"
        "    - old\n"
        "    # coord:end\n"
        "last: 2  # no final newline"
    )
    after, ours = text_blocks.apply_block("c.yaml", old.encode(), indented("- new\n"), Plan())
    assert ours
    assert after is not None
    assert after.decode() == (
        "first: 1\n"
        "list:\n"
        f"    {text_blocks.HASH_BEGIN}\n"
        "    - new\n"
        f"    {text_blocks.HASH_END}\n"
        "last: 2  # no final newline"
    )
    # a second run writes nothing
    again, _ = text_blocks.apply_block("c.yaml", after, indented("- new\n"), Plan())
    assert again == after
    # and removing it gives back every other byte
    removed, empty = text_blocks.remove_block("c.yaml", after, "hash")
    assert removed.decode() == "first: 1\nlist:\nlast: 2  # no final newline"
    assert not empty


def test_a_block_added_at_the_end_comes_out_with_the_blank_line_before_it() -> None:
    """A file edited since init is not restored from its copy: taking the block out must
    leave what the user had, not a trailing blank line per init/uninstall round."""
    old = b"# Agents\n\nBe kind.\n"
    spec = BlockSpec("md", lambda _indent: "body\n")
    after, _ = text_blocks.apply_block("AGENTS.md", old, spec, Plan())
    assert after == b"# Agents\n\nBe kind.\n\n<!-- coord:begin -->\nbody\n<!-- coord:end -->\n"
    assert text_blocks.remove_block("AGENTS.md", after, "md") == (old, False)


def test_a_block_that_never_closes_refuses_and_names_its_line() -> None:
    raw = b"# Agents\n\n<!-- coord:begin -->\nhalf\n"
    spec = BlockSpec("md", lambda _indent: "body\n")
    with pytest.raises(InvalidInput, match=r"AGENTS\.md: line 3 opens a coord block"):
        text_blocks.apply_block("AGENTS.md", raw, spec, Plan())
    with pytest.raises(InvalidInput, match="never closes"):
        text_blocks.remove_block("AGENTS.md", raw, "md")


def test_a_file_that_says_it_already_has_it_is_left_alone() -> None:
    raw = b"@./AGENTS.md\n\nGemini only.\n"
    spec = BlockSpec("md", lambda _indent: "@./AGENTS.md\n", already=("@./AGENTS.md",))
    plan = Plan()
    assert text_blocks.apply_block("GEMINI.md", raw, spec, plan) == (raw, False)
    assert plan.notes == ["GEMINI.md: already has it; left as it is"]


# --- --command ------------------------------------------------------------------------------


def test_command_words_reads_shell_words_and_keeps_a_path_with_spaces_whole(
    tmp_path: Path,
) -> None:
    assert command_words(None) == (["coord"], "coord")
    assert command_words("uv run coord") == (["uv", "run", "coord"], "uv run coord")
    exe = tmp_path / "my tools" / "coord"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    # one program, quoted for the shell wherever a hook or AGENTS.md names it
    assert command_words(str(exe)) == ([str(exe)], f"'{exe}'")
    with pytest.raises(InvalidInput, match="--command is empty"):
        command_words("  ")
