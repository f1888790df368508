"""Generated code: the `cuzk` proto package (mirrors the proto package path cuzk.v1)."""
