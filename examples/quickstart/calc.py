"""A tiny module with a bug for the quick start to fix."""


def add(a: int, b: int) -> int:
    return a - b
