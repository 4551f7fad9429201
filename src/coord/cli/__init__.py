"""The command-line face: argparse over the daemon's HTTP API."""
