"""Slot lists and the AEP scan that searches them: kernels shared by ``slot_selection`` and ``cyclic``."""
