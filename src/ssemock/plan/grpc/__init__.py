"""gRPC calls: which recorded call answers one (matching), what a replay serves (a call's steps
under faults, timing and its deadline), and how a recording is made."""
