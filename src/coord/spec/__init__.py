"""Design documents as work queues: parse, lint, and the claimable set of a document."""
