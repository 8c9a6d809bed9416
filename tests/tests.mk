# tests/: CUnit programs and test-only plugins
