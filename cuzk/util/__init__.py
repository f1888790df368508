"""Small shared facilities: atomic file writes, progress and stage timing, thread fan-out."""
