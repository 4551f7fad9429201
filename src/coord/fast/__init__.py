"""What runs before every edit and every CLI call: stdlib and the nouns only."""
