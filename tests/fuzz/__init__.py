"""A seeded, deterministic fuzz test of every input surface of cuzk (issue 11): see test_fuzz.py."""
