"""Every size limit of the board, in one place (a noun: no imports, nothing to pay at start).

The model's validation, the pattern normaliser on the guard's path and the OpenAPI document
all read these, so a limit cannot say one number in one face and another in the next.
"""

# SQLite's INTEGER is 64-bit: an id, token, sequence number or count beyond it is refused as
# input rather than overflowing in the driver.
MAX_INTEGER = 2**63 - 1
MAX_TITLE = 300
MAX_BODY = 64 * 1024
MAX_LABELS = 20
MAX_LABEL = 64
MAX_DEPS = 100
MAX_LEASE_SECONDS = 7 * 24 * 3600
MIN_LEASE_SECONDS = 1
MAX_IMPORT = 10_000
# A design document (`coord spec lint|status|import`, the MCP tool spec_status, `coord git`):
# its size, its work packages (the board imports at most this many from one document) and the
# package ids it names in all (dependencies, reservations, ownership tables; a range such as
# A1–A999 counts each id it stands for). Past any of them it is refused, naming the line: 3,000
# ranges made a 61 KB document name 3 million ids (a 311 MB answer).
MAX_SPEC_BYTES = 4 * 1024 * 1024
MAX_SPEC_PACKAGES = 10_000
MAX_SPEC_IDS = 100_000
MAX_SPEC_RANGE = 1000  # steps one range may take: A1–A1001 at most
MAX_FILES = 200
MAX_PATTERN = 1024  # characters of one file pattern or one check command, as given
MAX_PATTERN_WILDCARDS = 64  # '*', '?', '[...]' and '**' in one file pattern
MAX_BATCH = 200  # claim-next --count
# held files one held_files_changed report names (the after-tool check); it counts the rest
MAX_REPORTED_FILES = 200
# Claim-next gives up after passing this many items whose files others hold (and says so):
# each costs a read and an overlap check, and one request must not hold the daemon for long.
MAX_CLAIM_SCAN = 500
MAX_CHECKS = 20
# An item's thread is answered a page at a time, and a page is cut short once its replies
# hold this many bytes: ten slow readers of an item with 800 64 KiB replies took the daemon
# from 55 MB to 654 MB when the whole thread was one answer.
REPLIES_PAGE = 100
# An inbox is read a page at a time too (the rest stays unread for the next look).
INBOX_PAGE = 200
MAX_INBOX_PAGE = 1000
MAX_REPLIES_PAGE = 500
MAX_ANSWER_BYTES = 1024 * 1024
# A page of the event log (GET /v1/events) ends once its events' details hold this many
# bytes: an edit's event keeps a 64 KB body, and limit=5000 of them was a 325 MB answer. High
# enough that a page of ordinary events is never cut.
MAX_EVENTS_ANSWER_BYTES = 8 * 1024 * 1024
MAX_EVIDENCE_OUTPUT = 4096  # bytes of a check's output kept as evidence (its last lines)
# An edit's event keeps a changed text's old value whole (nowhere else keeps it once it is
# overwritten) and its new value up to this many characters: the new value is the item's own,
# and the next edit's old one, so the log holds every version once without doubling.
MAX_EVENT_TEXT = 4096
# An event stream (GET /v1/events/stream) whose reader is more events than this behind the
# board's newest tells it to reload rather than replay them (or cuts it, if its socket takes
# nothing more).
MAX_STREAM_BEHIND = 10_000
# `coord agents --prune` never forgets a name seen within this many seconds (an agent may be
# between two calls; a forgotten one that comes back starts its inbox over)
MIN_PRUNE_AGE = 3600.0

# What a value may be. The item kinds, in one home: the model validates against them, the
# schemas list them, the CLI offers them as choices without loading the model (~36 ms).
KINDS = ("task", "bug", "note", "handoff")
# claim-next offers work, not announcements: notes are claimable only by id or explicit filter.
WORK_KINDS = ("task", "bug", "handoff")
