"""The request and response models of each API family (see ../model.py)."""
