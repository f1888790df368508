"""Generated code for cuzk/v1/proving.proto (proto package cuzk.v1); see cuzk.service.proto."""
