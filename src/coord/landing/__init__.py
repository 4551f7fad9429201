"""The flow from claim to main: worktrees, snapshots, the landing queue's git steps."""
