"""`coord init` and `coord uninstall`: wiring coord into the agent clients' configs.

- ``command``: the two commands' arguments and entries; the command line calls them.
- ``plan``: every change computed before a byte is written, the dry run's diffs, and the record
  (``.coord/wiring.json``) that ``uninstall`` undoes from.
- ``json_merge`` and ``text_blocks``: the two ways coord edits a file it does not own (entries
  beside the user's in JSON; one marked block in text); ``uninstall`` takes out exactly those.
- one module a client (``claude``, ``codex``, ``gemini``, ``cursor``), with what it reads and
  the documents that say so; ``shared_shapes`` holds the JSON shapes several clients read alike,
  ``instructions`` what agents read (``AGENTS.md``), ``precommit`` the git pre-commit guard.
"""
