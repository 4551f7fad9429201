"""Storage backends behind one small interface (``coord.storage.base``)."""
