"""Pipeline stages: each module does one job behind a typed contract (see design.md §1)."""
