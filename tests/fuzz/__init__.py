"""A seeded, deterministic fuzz test of every input surface of cuzk: see test_fuzz.py."""
